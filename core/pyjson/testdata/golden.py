"""Writes golden.json: what CPython's json module does with tricky inputs.

Run from this folder with `python3 golden.py` (the Go tests only read the
output, so CI needs no Python). Each dumps case holds its value as a JSON text
with every non-ASCII character escaped, so the file itself is plain ASCII.
"""
import json
import platform

values = [
    {"b": 1, "a": ["x"]},
    "plain ascii",
    "caf\u00e9 na\u00efve \u65e5\u672c",
    "emoji \U0001F600 and \U00010348 above U+FFFF",
    "<script>&amp;</script> > <",
    "line\u2028separator\u2029paragraph",
    'quotes " and \\ backslash / slash',
    "controls \x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f\x7f",
    "\ufeffbom and \ufffd replacement",
    "lone \ud800 high and \udc00 low surrogates",
    {"z": {"y": [1, 2.5, -0.0, 1e16, 1e-05, 0.0001, 123456789012345678901234567890],
           "x": True, "w": None, "v": False}, "\u00e9": "non-ascii key", "A": [], "B": {}},
    [float("inf"), float("-inf"), 1e308, 5e-324, 0.1 + 0.2, 100.0, -1],
    {"question": "In Python 3.12, how do I keep \u00e9 and \U0001F40D?", "observations": [
        {"tool": "read", "arguments": {"source_id": "x"},
         "result": {"text": "tab\there \"quoted\" <b>bold</b> & \u2028"}}]},
]

loads = [
    '{"a": 1, "b": 2, "a": 3}',
    '[NaN, Infinity, -Infinity]',
    '{"x": "\\ud800\\udc00 pair, \\ud800 lone, \\udc00\\ud800 reversed"}',
    '  {"k": [true, false, null]}  \n',
    '1.0',
    '1E400',
    '-0',
    '123456789012345678901234567890',
    '"\\u00E9\\u00e9"',
    '"raw \u00e9 and \U0001F600"',
    '',
    '   ',
    '{"a": 1,}',
    '[1, 2',
    '{"a" 1}',
    '01',
    '1.',
    '1e',
    '-',
    '"tab\there"',
    '"bad \\x escape"',
    '"\\u12G4"',
    '{"a": 1} extra',
    "{'a': 1}",
    'nan',
    'True',
    '\ufeff{}',
    '"unterminated',
    '[' * 50 + ']' * 50,
]

cases = {"python": platform.python_version(), "dumps": [], "loads": []}
for value in values:
    cases["dumps"].append({
        "input": json.dumps(value),
        "compact": json.dumps(value),
        "sorted": json.dumps(value, sort_keys=True),
        "indent": json.dumps(value, indent=2),
        "unicode": json.dumps(value, ensure_ascii=False, sort_keys=True),
    })
for text in loads:
    try:
        value = json.loads(text)
        cases["loads"].append({"text": text, "ok": True, "canonical": json.dumps(value, sort_keys=True)})
    except ValueError:
        cases["loads"].append({"text": text, "ok": False})

with open("golden.json", "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
