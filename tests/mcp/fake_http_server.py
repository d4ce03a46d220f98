#!/usr/bin/env python3
"""A strict little MCP server over Streamable HTTP, for the HTTP transport's
tests. Standard library only; listens on 127.0.0.1 on a free port and prints
the port as its first line.

It answers with plain JSON (server-everything answers with event streams,
so both reply kinds are covered), requires `Authorization: Bearer secret`,
the `Mcp-Session-Id` it gave and the `MCP-Protocol-Version` header after
initialization, and pushes `notifications/tools/list_changed` on the GET
event stream when the tool `add_tool` is called. Tools: echo(text),
add_tool(), late() once added, and big(kib, sse): a text result of `kib`
KiB, as JSON or (sse true) as an event stream.

Options: `--port N` listens on port N (to be restarted at the same URL: the
new process knows none of the old sessions); `--forget-sessions` answers
404 to every session after the initialize that made it.
"""

import json
import queue
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "Bearer secret"
sessions = {}  # id -> queue of messages for its GET stream (None ends it)
tools = [
    {"name": "echo", "description": "Echo the text",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add_tool", "description": "Add the tool `late`", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "A big result",
     "inputSchema": {"type": "object", "properties": {"kib": {"type": "integer"}, "sse": {"type": "boolean"}},
                     "required": ["kib"]}},
]
argv = sys.argv[1:]
PORT = int(argv[argv.index("--port") + 1]) if "--port" in argv else 0
FORGET = "--forget-sessions" in argv


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def reply_sse(self, message):
        data = b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, status, message):
        self.reply(status, {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}})

    def session(self):
        """The request's session queue, or None after refusing it."""
        if self.headers.get("Authorization") != TOKEN:
            self.refuse(401, "Unauthorized: bad or missing bearer token")
            return None
        sid = self.headers.get("Mcp-Session-Id")
        if sid not in sessions or FORGET:
            self.refuse(404, "Session not found")
            return None
        if self.headers.get("MCP-Protocol-Version") is None:
            self.refuse(400, "Bad Request: missing MCP-Protocol-Version header")
            return None
        return sessions[sid]

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            if self.headers.get("Authorization") != TOKEN:
                return self.refuse(401, "Unauthorized: bad or missing bearer token")
            sid = str(uuid.uuid4())
            sessions[sid] = queue.Queue()
            return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake-http-server", "version": "1.0.0"},
            }}, [("Mcp-Session-Id", sid)])
        events = self.session()
        if events is None:
            return
        if rid is None or method is None:
            return self.reply(202)
        if method == "tools/list":
            return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        if method == "tools/call":
            name, args = message["params"]["name"], message["params"].get("arguments") or {}
            if name == "echo":
                text = "echo: " + args["text"]
            elif name == "add_tool":
                if not any(t["name"] == "late" for t in tools):
                    tools.append({"name": "late", "description": "Added later", "inputSchema": {"type": "object"}})
                events.put({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                text = "added"
            elif name == "late":
                text = "late tool here"
            elif name == "big":
                body = {"jsonrpc": "2.0", "id": rid,
                        "result": {"content": [{"type": "text", "text": "b" * (args["kib"] * 1024)}]}}
                if args.get("sse"):
                    return self.reply_sse(body)
                return self.reply(200, body)
            else:
                return self.reply(200, {"jsonrpc": "2.0", "id": rid,
                                        "error": {"code": -32602, "message": "Unknown tool: " + name}})
            return self.reply(200, {"jsonrpc": "2.0", "id": rid,
                                    "result": {"content": [{"type": "text", "text": text}]}})
        self.reply(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

    def do_GET(self):
        events = self.session()
        if events is None:
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b": stream open\n\n")
        self.wfile.flush()
        while True:
            message = events.get()
            if message is None:
                return
            self.wfile.write(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
            self.wfile.flush()

    def do_DELETE(self):
        events = self.session()
        if events is None:
            return
        events.put(None)
        del sessions[self.headers["Mcp-Session-Id"]]
        self.reply(200)


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that stops reading a body too large for it is expected.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


server = Server(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
# Ends when its parent closes stdin (or kills it).
sys.stdin.read()
