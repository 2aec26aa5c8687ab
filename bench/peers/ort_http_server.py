"""The HTTP server a Python user would write around onnxruntime: one InferenceSession behind
the standard library's ThreadingHTTPServer (HTTP/1.1, keep-alive), taking the first input's raw
float32 bytes (extents in an `Input-Dimensions: 1,3,224,224` header) and answering the first
output's raw float32 bytes. Default session options; a third argument sets intra_op_num_threads
only. The same protocol as ort_http_server.ts, for the load benchmark's Python peer.

python3 bench/peers/ort_http_server.py <model.onnx> [port] [threads]
prints `listening on http://127.0.0.1:<port>`.
"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import onnxruntime as ort

model_path = sys.argv[1]
port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
options = ort.SessionOptions()
if len(sys.argv) > 3:
    options.intra_op_num_threads = int(sys.argv[3])
session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
input_name = session.get_inputs()[0].name
output_name = session.get_outputs()[0].name


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body are two writes: without TCP_NODELAY, Nagle's algorithm holds
    # the body until the client's delayed ACK (40 ms a request).
    disable_nagle_algorithm = True

    def do_POST(self):
        try:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            dims = [int(d) for d in self.headers["Input-Dimensions"].split(",")]
            feeds = {input_name: np.frombuffer(body, dtype=np.float32).reshape(dims)}
            output = session.run([output_name], feeds)[0]
            answer = np.ascontiguousarray(output, dtype=np.float32).tobytes()
            status, content_type = 200, "application/octet-stream"
        except Exception as error:  # the client gets the message, as the Node peer does
            answer, status, content_type = str(error).encode(), 400, "text/plain"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


# socketserver's listen backlog is 5: 16 clients connecting at once would be reset.
ThreadingHTTPServer.request_queue_size = 128
server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
