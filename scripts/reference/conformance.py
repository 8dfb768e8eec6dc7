"""Generates reference-conformance recordings with the seed's own controller.

    python3 scripts/reference/conformance.py --seed PATH [--out DIR]

It extracts agent.py and provider.py verbatim from the reference lab's
source document (PATH: the text that publishes them), runs adversarial
scenarios through the reference `run()` with a model that answers with
crafted generateContent replies (recording every request it is sent, as the
live provider does), then replays each recording with the reference
ReplayModel and writes what that replay returned. The Go tests replay the
same recordings through our controller and must get the same results.

Nothing here runs in CI: the outputs in core/lab/testdata/reference/ are
committed. Re-run it after changing a scenario.
"""
import argparse
import copy
import hashlib
import importlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def extract(seed_text, first_line, end_marker):
    start = seed_text.index(first_line)
    end = seed_text.index(end_marker, start)
    return seed_text[start:end].rstrip() + '\n'


def load_reference(seed_path):
    text = open(seed_path, encoding='utf-8').read()
    agent_src = extract(text, '"""Model decisions propose actions.', '\n3. Inspect the passages')
    provider_src = extract(text, '"""Capped Gemini JSON decisions', '\nInspect the plan, then opt into')
    work = tempfile.mkdtemp(prefix='ragagent-reference-')
    for name, src in (('agent.py', agent_src), ('provider.py', provider_src)):
        with open(os.path.join(work, name), 'w', encoding='utf-8') as f:
            f.write(src)
    with open(os.path.join(HERE, 'tools.py'), encoding='utf-8') as f:
        tools_src = f.read()
    with open(os.path.join(work, 'tools.py'), 'w', encoding='utf-8') as f:
        f.write(tools_src)
    sys.path.insert(0, work)
    return importlib.import_module('agent'), importlib.import_module('provider'), importlib.import_module('tools'), {
        'agent.py': hashlib.sha256(agent_src.encode()).hexdigest(),
        'provider.py': hashlib.sha256(provider_src.encode()).hexdigest()}


def d(action, assessment='Checking the evidence.', query='', source_id='', answer='', citations=None, **extra):
    value = {'action': action, 'assessment': assessment, 'query': query, 'source_id': source_id,
             'answer': answer, 'citations': citations or []}
    value.update(extra)
    return value


def usage(n):
    return {'promptTokenCount': 400 + 100 * n, 'candidatesTokenCount': 60, 'totalTokenCount': 460 + 100 * n + 7,
            'thoughtsTokenCount': 7}


def response(text=None, decision=None, finish='STOP', parts=None, candidates=None, n=0):
    if parts is None:
        parts = [{'text': text if text is not None else json.dumps(decision)}]
    if candidates is None:
        candidates = [{'content': {'role': 'model', 'parts': parts}, 'finishReason': finish, 'index': 0}]
    return {'candidates': candidates, 'usageMetadata': usage(n), 'modelVersion': 'gemini-3.8-flash-reference-fake'}


Q = 'In Python 3.12, does Path.write_text append to an existing file or overwrite it?'
QUOTE = 'An existing file is overwritten.'
ANSWER = d('answer', answer='It overwrites the file.', citations=[{'source_id': 'path-write', 'quote': QUOTE}])
SEARCH_PW = d('search', query='Path.write_text')
READ_PW = d('read', source_id='path-write')


def scenario(sid, replies, question=Q, version='3.12', mode='agent', limits=None, **extra):
    s = {'id': sid, 'question': question, 'version': version, 'mode': mode, 'limits': limits,
         'replies': replies}
    s.update(extra)
    return s


def R(decision):
    return {'response': response(decision=decision)}


def T(text):
    return {'response': response(text=text)}


STANDARD = [
    scenario('answer-after-search-and-read', [R(SEARCH_PW), R(READ_PW), R(ANSWER)]),
    scenario('unknown-action', [R(d('browse', query=''))]),
    scenario('unknown-action-number', [R(d(5))]),
    scenario('invalid-decision-missing-key', [T('{"action": "stop", "assessment": "x", "query": "", "source_id": "", "answer": ""}')]),
    scenario('invalid-decision-extra-key', [R(d('stop', url='https://example.com'))]),
    scenario('invalid-decision-not-object', [T('[1, 2]')]),
    scenario('invalid-decision-blank-assessment', [R(d('stop', assessment=' \x1c\u3000\u2028'))]),
    scenario('invalid-decision-long-query', [R(d('search', query='a' * 2001))]),
    scenario('long-non-ascii-query-is-admitted', [R(d('search', query='\u00e9' * 1989 + ' write_text')), R(d('stop'))]),
    scenario('invalid-decision-citations-not-list', [R(d('stop', citations='x'))]),
    scenario('invalid-decision-too-many-citations', [R(d('answer', answer='a', citations=[{'source_id': 'path-write', 'quote': QUOTE}] * 7))]),
    scenario('invalid-decision-query-not-string', [R(d('search', query=5))]),
    scenario('invalid-citation-not-object', [R(d('answer', answer='a', citations=['path-write']))]),
    scenario('invalid-citation-extra-key', [R(d('answer', answer='a', citations=[{'source_id': 'path-write', 'quote': QUOTE, 'url': 'u'}]))]),
    scenario('invalid-citation-blank-quote', [R(d('answer', answer='a', citations=[{'source_id': 'path-write', 'quote': ' \t'}]))]),
    scenario('invalid-citation-quote-not-string', [R(d('answer', answer='a', citations=[{'source_id': 'path-write', 'quote': 1}]))]),
    scenario('unexpected-fields-stop-with-query', [R(d('stop', query='more'))]),
    scenario('unexpected-fields-search-with-source', [R(d('search', query='x', source_id='path-write'))]),
    scenario('unexpected-fields-read-with-citations', [R(d('read', source_id='path-write', citations=[{'source_id': 'path-write', 'quote': QUOTE}]))]),
    scenario('unexpected-fields-stop-with-answer', [R(d('stop', answer='maybe'))]),
    scenario('invalid-query-blank', [R(d('search', query='\t \u00a0'))]),
    scenario('invalid-source-empty', [R(d('read', source_id=''))]),
    scenario('missing-answer-evidence-no-citations', [R(d('answer', answer='It overwrites.'))]),
    scenario('missing-answer-evidence-blank-answer', [R(d('answer', answer='  ', citations=[{'source_id': 'path-write', 'quote': QUOTE}]))]),
    scenario('unissued-source', [R(READ_PW)]),
    scenario('unissued-source-blank-id', [R(d('read', source_id=' '))]),
    scenario('duplicate-read', [R(SEARCH_PW), R(READ_PW), R(READ_PW)]),
    scenario('duplicate-query-equivalent-terms', [R(d('search', query='Path write_text')), R(d('search', query='TEXT write, path? path'))]),
    scenario('search-limit', [R(SEARCH_PW), R(d('search', query='json dumps'))], limits={'searches': 1}),
    scenario('read-limit', [R(SEARCH_PW), R(READ_PW), R(d('read', source_id='path-read'))], limits={'reads': 1}),
    scenario('source-byte-limit', [R(SEARCH_PW), R(READ_PW)], limits={'source_bytes': 223}),
    scenario('source-byte-limit-exact-fit', [R(SEARCH_PW), R(READ_PW), R(d('stop'))], limits={'source_bytes': 224}),
    scenario('invalid-query-no-terms-counts-a-search', [R(d('search', query='??? ...'))]),
    scenario('unread-citation', [R(SEARCH_PW), R(READ_PW), R(d('answer', answer='a', citations=[{'source_id': 'path-read', 'quote': 'Path.read_text'}]))]),
    scenario('altered-quote', [R(SEARCH_PW), R(READ_PW), R(d('answer', answer='a', citations=[{'source_id': 'path-write', 'quote': 'An existing file is replaced.'}]))]),
    scenario('fixed-tool-request', [R(SEARCH_PW)], mode='fixed'),
    scenario('fixed-answer', [R(ANSWER)], mode='fixed'),
    scenario('fixed-stop', [R(d('stop', assessment='Not enough evidence.'))], mode='fixed'),
    scenario('fixed-read-limit-before-any-call', [], mode='fixed', limits={'reads': 1}),
    scenario('fixed-byte-limit-before-any-call', [], mode='fixed', limits={'source_bytes': 300}),
    scenario('unfinished-max-tokens', [{'response': response(decision=d('stop'), finish='MAX_TOKENS')}]),
    scenario('unfinished-safety', [{'response': response(decision=d('stop'), finish='SAFETY')}]),
    scenario('unfinished-two-candidates', [{'response': response(candidates=[
        {'content': {'parts': [{'text': json.dumps(d('stop'))}]}, 'finishReason': 'STOP'}] * 2)}]),
    scenario('unfinished-no-candidates', [{'response': {'promptFeedback': {'blockReason': 'OTHER'}}}]),
    scenario('thought-parts-are-skipped', [{'response': response(parts=[
        {'thought': True, 'text': 'thinking, not JSON {'},
        {'text': json.dumps(d('stop'))[:20]}, {'text': json.dumps(d('stop'))[20:]}])}]),
    scenario('invalid-json-prose', [T('Sure! {"action": "stop"}')]),
    scenario('invalid-json-empty', [{'response': response(parts=[])}]),
    scenario('invalid-json-trailing-data', [T(json.dumps(d('stop')) + ' {}')]),
    scenario('nan-is-json-but-not-a-string', [T('{"action": "stop", "assessment": NaN, "query": "", "source_id": "", "answer": "", "citations": []}')]),
    scenario('duplicate-keys-last-wins', [T('{"action": "search", "action": "stop", "assessment": "x", "query": "", "source_id": "", "answer": "", "citations": []}')]),
    scenario('lone-surrogate-query-round-trips', [T('{"action": "search", "assessment": "x", "query": "\\ud800 write_text", "source_id": "", "answer": "", "citations": []}'), R(d('stop'))]),
    scenario('transport-http-error', [{'error': 'HTTPError', 'http_status': 429}]),
    scenario('transport-timeout', [R(SEARCH_PW), {'error': 'TimeoutError'}]),
    scenario('transport-url-error', [{'error': 'URLError'}]),
    scenario('model-call-limit', [R(SEARCH_PW), R(d('search', query='json dumps'))], limits={'model_calls': 2}),
    scenario('deadline-before-call', [R(SEARCH_PW)], clock=[0, 10, 10, 181]),
    scenario('deadline-after-decision', [R(SEARCH_PW)], clock=[0, 1, 180]),
    scenario('deadline-remaining-just-positive', [R(SEARCH_PW), R(d('stop'))], clock=[0, 1, 2, 179.5, 179.9]),
    scenario('changed-read', [R(SEARCH_PW), R(READ_PW)], tamper={'path-write': 'Path.write_text appends to the file.'}),
    scenario('invalid-limits-zero', [], limits={'reads': 0}),
    scenario('invalid-limits-float', [], limits={'model_calls': 9.0}),
    scenario('invalid-limits-bool', [], limits={'searches': True}),
    scenario('invalid-limits-over-cap', [], limits={'source_bytes': 8193}),
    scenario('invalid-question-blank', [], question=' \u2029 '),
    scenario('invalid-question-too-long', [], question='q' * 513),
    scenario('question-at-length-cap', [R(d('stop'))], question='\U0001F600' * 512),
    scenario('invalid-version-three-parts', [], version='3.12.1'),
    scenario('invalid-version-fullwidth-digit', [], version='\uff13.12'),
    scenario('invalid-mode', [], mode='hybrid'),
    scenario('invalid-limits-before-question', [], question='', limits={'reads': 7}),
    scenario('blank-question-before-version-type', [], question='', version=5),
    scenario('blank-question-before-mode-type', [], question=' ', mode=5),
    scenario('bad-version-before-missing-mode', [], version='x', mode=None),
    scenario('question-not-a-string', [], question=['q']),
    scenario('version-not-a-string', [], version=3.12),
    scenario('mode-not-a-string', [], mode=['agent']),
    scenario('unicode-question-state-bytes', [R(SEARCH_PW), R(READ_PW), R(ANSWER)],
             question='In Python 3.12, does Path.write_text keep \u00e9, \U0001F600, <b>&amp;</b>, \u2028, "quotes", \\ and \x01 as is?'),
    scenario('dotted-capital-i-and-kelvin-terms', [R(d('search', query='\u0130PATH.write_text')),
                                                   R(d('search', query='i path write text \u212a')),
                                                   R(d('search', query='\u212a path write text i'))]),
]

ADVERSARIAL_PASSAGES = [
    {'source_id': 'markup', 'version': '3.12', 'url': 'https://docs.python.org/3.12/library/html.html',
     'text': 'The <img src=x onerror=alert(1)> tag & "quoted" \\ backslash text stays data.\u2028Line two.'},
    {'source_id': 'unicode', 'version': '3.12', 'url': 'https://docs.python.org/3.12/library/unicodedata.html',
     'text': 'Text with \u00e9, \u65e5\u672c, \U0001F600 and a tab\there keeps its characters \u2029 in the text.'},
    {'source_id': 'controls', 'version': '3.12', 'url': 'https://docs.python.org/3.12/library/string.html',
     'text': 'Control \x01 and \x1f and \x7f characters and form\x0cfeed are escaped in JSON text.'},
]
for p in ADVERSARIAL_PASSAGES:
    p['text_sha256'] = hashlib.sha256(p['text'].encode()).hexdigest()

ADVERSARIAL = [
    scenario('adversarial-text-read-and-quoted', [
        R(d('search', query='text tag characters')),
        R(d('read', source_id='markup')), R(d('read', source_id='unicode')),
        R(d('search', query='control characters escaped')), R(d('read', source_id='controls')),
        R(d('answer', answer='All three keep their text: <img> & \U0001F600.', citations=[
            {'source_id': 'markup', 'quote': '<img src=x onerror=alert(1)> tag & "quoted" \\ backslash'},
            {'source_id': 'unicode', 'quote': '\U0001F600 and a tab\there'},
            {'source_id': 'controls', 'quote': 'Control \x01 and \x1f and \x7f'}]))],
        question='Which passages keep <markup>, \u00e9 and control characters?'),
]


class CraftedModel:
    """Answers with crafted replies and records each exchange as provider.Gemini does."""

    def __init__(self, provider, replies):
        self.provider, self.replies, self.records = provider, list(replies), []

    def decide(self, messages, schema, timeout=45):
        body = self.provider.payload(messages, schema)
        if not self.replies:
            raise AssertionError('scenario ran out of replies')
        reply = self.replies.pop(0)
        record = {'request': copy.deepcopy(body)}
        if 'error' in reply:
            record['error'] = reply['error']
            if 'http_status' in reply:
                record['http_status'] = reply['http_status']
            self.records.append(record)
            raise RuntimeError('model_transport_failed:' + reply['error'])
        record['response'] = reply['response']
        self.records.append(record)
        return self.provider.decode(copy.deepcopy(reply['response']))


def clock_from(readings):
    if readings is None:
        return lambda: 0.0
    values = list(readings)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


PUBLISHED_FIELDS = ('status', 'reason', 'answer', 'citations', 'question', 'version', 'mode', 'limits',
                    'usage', 'decisions', 'observations')


def run_one(agent, tools_mod, passages, s, model):
    try:
        limits = agent.Limits(**s['limits']) if s['limits'] is not None else None
    except (TypeError, ValueError) as error:
        return None, str(error)
    tools = tools_mod.Tools(passages, tamper=s.get('tamper'))
    try:
        result = agent.run(tools, model, s['question'], version=s['version'], limits=limits,
                           mode=s['mode'], clock=clock_from(s.get('clock')))
    except ValueError as error:
        return None, str(error)
    return {k: result[k] for k in PUBLISHED_FIELDS}, None


def trial_of(s, exchanges):
    t = {'id': s['id'], 'case_id': '', 'split': '', 'repeat': 1, 'mode': s['mode'], 'question': s['question'],
         'version': s['version'], 'limits': s['limits'], 'exchanges': exchanges}
    for key in ('clock', 'tamper'):
        if key in s:
            t[key] = s[key]
    return t


def build(agent, provider, tools_mod, passages, scenarios):
    trials, expected = [], {}
    for s in scenarios:
        model = CraftedModel(provider, s['replies'])
        live, live_error = run_one(agent, tools_mod, passages, s, model)
        if model.replies:
            raise AssertionError('%s: %d replies unused' % (s['id'], len(model.replies)))
        trial = trial_of(s, model.records)
        trials.append(trial)
        # The expectation is what the reference replay of the recording returns.
        replayed, replay_error = run_one(agent, tools_mod, passages, s,
                                         provider.ReplayModel(json.loads(json.dumps(model.records))))
        if (replayed, replay_error) != (live, live_error):
            raise AssertionError('%s: reference replay differs from the crafted run' % s['id'])
        expected[s['id']] = expectation(replayed, replay_error)
    return trials, expected


def expectation(result, error):
    """Python reports a JSON decoding failure by its decoder's message; the
    design fixes one stable code for it, so the message is kept beside it."""
    if result is not None and ' ' in result['reason']:
        result = dict(result, reason='invalid_model_json', python_reason=result['reason'])
    return {'result': result, 'error': error}


def mutated(agent, provider, tools_mod, passages, trials, expected):
    """Replay-only cases: a changed request and a recording that runs out."""
    base = next(t for t in trials if t['id'] == 'answer-after-search-and-read')
    changed = copy.deepcopy(base)
    changed['id'] = 'replay-request-mismatch-changed-question'
    changed['question'] = Q.replace('3.12', '3.12 exactly')
    cut = copy.deepcopy(base)
    cut['id'] = 'replay-exhausted'
    cut['exchanges'] = cut['exchanges'][:2]
    later = copy.deepcopy(base)
    later['id'] = 'replay-request-mismatch-changed-observation'
    later['exchanges'][2]['request']['contents'][0]['parts'][0]['text'] = \
        later['exchanges'][2]['request']['contents'][0]['parts'][0]['text'].replace('overwritten', 'replaced')
    for t in (changed, cut, later):
        s = {'question': t['question'], 'version': t['version'], 'mode': t['mode'], 'limits': t['limits']}
        result, error = run_one(agent, tools_mod, passages, s, provider.ReplayModel(t['exchanges']))
        trials.append(t)
        expected[t['id']] = expectation(result, error)


def write_json(path, value):
    with open(path, 'w', encoding='ascii') as f:
        json.dump(value, f, indent=2)
        f.write('\n')


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--seed', required=True, help="the reference lab's source document, which publishes agent.py and provider.py")
    p.add_argument('--out', default=os.path.join(ROOT, 'core', 'lab', 'testdata', 'reference'))
    a = p.parse_args()
    agent, provider, tools_mod, hashes = load_reference(a.seed)
    with open(os.path.join(ROOT, 'fixtures', 'snapshot.json'), encoding='utf-8') as f:
        standard = json.load(f)['passages']
    os.makedirs(a.out, exist_ok=True)
    meta = {'generator': 'scripts/reference/conformance.py', 'python': sys.version.split()[0],
            'reference_sha256': hashes}
    sets = [('standard', standard, STANDARD, None), ('adversarial', ADVERSARIAL_PASSAGES, ADVERSARIAL, 'adversarial.snapshot.json')]
    for name, passages, scenarios, snapshot_file in sets:
        trials, expected = build(agent, provider, tools_mod, passages, scenarios)
        if name == 'standard':
            mutated(agent, provider, tools_mod, passages, trials, expected)
        recording = {'format': 'ragagent-recording/1', 'model': provider.MODEL, 'endpoint': provider.ENDPOINT,
                     'config': provider.CONFIG, 'recorded_at': 'crafted by ' + meta['generator'],
                     'reference': meta, 'trials': trials}
        write_json(os.path.join(a.out, name + '.recording.json'), recording)
        write_json(os.path.join(a.out, name + '.expected.json'), {'reference': meta, 'trials': expected})
        if snapshot_file:
            write_json(os.path.join(a.out, snapshot_file), {
                'format': 'ragagent-snapshot/1',
                'description': 'Adversarial passages for reference conformance (markup, non-ASCII, controls).',
                'passages': passages})
        print('%s: %d trials' % (name, len(trials)))


if __name__ == '__main__':
    main()
