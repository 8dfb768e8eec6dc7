"""A tools.py for the reference controller, reconstructed from DESIGN.md.

The seed publishes agent.py and provider.py but not tools.py; this module
implements the behaviour DESIGN.md fixes (literal multi-term OR search over
SQLite FTS5 with the version filter before the limit, handles with bytes and
sha256 receipts, changed_read) so the reference controller can run here.
"""
import hashlib
import re
import sqlite3


class ToolError(Exception):
    pass


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


class Tools:
    def __init__(self, passages, tamper=None):
        self.db = sqlite3.connect(':memory:')
        self.db.execute('CREATE VIRTUAL TABLE passages USING fts5(version UNINDEXED, text)')
        for rowid, p in enumerate(passages, 1):
            self.db.execute('INSERT INTO passages(rowid, version, text) VALUES (?, ?, ?)',
                            (rowid, p['version'], p['text']))
        self.rows = passages
        self.by_id = {p['source_id']: p for p in passages}
        self.tamper = tamper or {}

    def search(self, query, k, version):
        terms = list(dict.fromkeys(re.findall(r'[a-z0-9]+', query.lower())))
        if not terms:
            raise ToolError('invalid_query')
        match = ' OR '.join('"%s"' % t for t in terms)
        rows = self.db.execute(
            'SELECT rowid FROM passages WHERE passages MATCH ? AND version = ? '
            'ORDER BY bm25(passages), rowid LIMIT ?', (match, version, k)).fetchall()
        results = []
        for rank, (rowid,) in enumerate(rows, 1):
            p = self.rows[rowid - 1]
            results.append({'source_id': p['source_id'], 'rank': rank, 'version': p['version'],
                            'bytes': len(p['text'].encode()), 'text_sha256': p['text_sha256']})
        return {'results': results}

    def read_cost(self, handle):
        return handle['bytes']

    def read(self, handle):
        p = dict(self.by_id[handle['source_id']])
        if handle['source_id'] in self.tamper:
            p['text'] = self.tamper[handle['source_id']]
        return {k: p[k] for k in ('source_id', 'version', 'text', 'url', 'text_sha256')}

    def validate_read(self, result, handle):
        if (result['source_id'] != handle['source_id'] or result['version'] != handle['version']
                or result['text_sha256'] != handle['text_sha256']
                or sha256(result['text']) != handle['text_sha256']):
            raise ToolError('changed_read')
