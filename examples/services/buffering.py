"""A gzip JSON ingest endpoint in Python's standard library, written the usual
way: read the whole body, gzip.decompress it, json.loads the text, count the
records. Its answers are right; its memory is several times the body, per
request in flight, and a zip bomb is inflated whole. The grader fails it on
memory, with the figures (docs/lessons/grade.md, "Grade your own service"):

    npm run grade -- --url http://127.0.0.1:3102/ingest --start "python3 examples/services/buffering.py"

It reads bodies sent with a Content-Length and chunked ones (Transfer-Encoding:
chunked, which http.server leaves to the handler). A body that is not gzip or
not JSON gets a 400.

    PORT=3102 python3 examples/services/buffering.py
"""
import gzip
import json
import os
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def read_chunked(stream):
    """The body of a chunked request: each chunk's size in hex, the chunk, CRLF; a 0 ends it."""
    parts = []
    while True:
        size_line = stream.readline(1024)
        if not size_line:
            raise ValueError('the body ended inside a chunk')
        size = int(size_line.split(b';')[0].strip(), 16)
        if size == 0:
            # trailers, if any, up to the empty line
            while stream.readline(1024) not in (b'\r\n', b'\n', b''):
                pass
            return b''.join(parts)
        parts.append(stream.read(size))
        stream.readline(2)


class Ingest(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_POST(self):
        if self.path != '/ingest':
            return self.answer(404, {'error': 'POST /ingest'})
        try:
            if 'chunked' in self.headers.get('Transfer-Encoding', '').lower():
                body = read_chunked(self.rfile)
            else:
                body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        except (ValueError, ConnectionError) as err:
            self.close_connection = True
            return self.answer(400, {'error': str(err)})
        try:
            # the whole body, then the whole inflated body, then every object
            doc = json.loads(gzip.decompress(body))
        except (OSError, EOFError, zlib.error, ValueError) as err:
            return self.answer(400, {'error': str(err)})
        items = doc.get('items', []) if isinstance(doc, dict) else []
        id_sum = sum(r['id'] for r in items if isinstance(r, dict) and type(r.get('id')) is int and abs(r['id']) < 2 ** 53)
        self.answer(200, {'items': len(items), 'idSum': str(id_sum)})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass


if __name__ == '__main__':
    port = int(os.environ.get('PORT', '3102'))
    server = ThreadingHTTPServer(('127.0.0.1', port), Ingest)
    print(f'buffering ingest (Python) at http://127.0.0.1:{port}/ingest (pid {os.getpid()})', flush=True)
    server.serve_forever()
