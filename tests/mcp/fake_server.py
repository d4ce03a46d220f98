#!/usr/bin/env python3
"""A misbehaving MCP server over stdio, for the MCP client's fault tests.

Standard library only. Tools (all answered on their own thread, so several
calls can be in flight):
  echo(text)          -> "echo: <text>"
  slow(ms, text)      -> "<text>" after ms milliseconds
  fail(message)       -> an isError result with the message
  rpc_error()         -> a JSON-RPC error (-32001, "the database is locked")
  crash()             -> writes to stderr and exits with status 7 mid-call
  hang()              -> never answers
  garbage()           -> writes a line that is not JSON, never answers
  close_stdout()      -> closes its stdout and stderr mid-call and keeps running
  media()             -> text, image and embedded resource content
  ping_client()       -> pings the client and answers once it replied
  add_tool()          -> adds the tool `late` and notifies tools/list_changed
  close_stdin()       -> closes its stdin mid-call (on the reading thread, so
                         the client sees it closed), never answers, keeps running
  stop_reading()      -> answers, then stops reading stdin for 60 s
  flood(stream, mb)   -> writes mb MiB without a newline on `stdout` (then a
                         newline, and never answers) or `stderr` (then a
                         newline, and answers "flooded")
  rendezvous(size, text) -> answers once `size` calls are in flight together,
                         the last one to arrive first; "alone" after 60 s
Options:
  --exit-early        print an error to stderr and exit 3 before reading
  --protocol V        answer initialize with protocol version V
  --page-size N       tools/list pages of N tools (default 3)
  --close-stdin       before answering the last tools/list page, shut down
                      the reading side of stdin and stay alive for 30 s:
                      the client's next write finds no reader (EPIPE, or
                      SIGPIPE on a plain pipe), whatever the timing
  --bad-tools         list two more entries that are no valid tools: one
                      named by a number, one with a schema that is not one
  --hang-initialize   never answer initialize, and ignore the end of stdin
"""

import json
import os
import socket
import sys
import threading
import time

args = sys.argv[1:]
if "--exit-early" in args:
    sys.stderr.write("fake-server: cannot open database /nonexistent/db.sqlite\n")
    sys.stderr.flush()
    sys.exit(3)

protocol = None
page_size = 3
if "--protocol" in args:
    protocol = args[args.index("--protocol") + 1]
if "--page-size" in args:
    page_size = int(args[args.index("--page-size") + 1])

out_lock = threading.Lock()
pending_pings = {}


def send(message):
    with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def schema(**props):
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": list(props),
    }


tools = [
    {"name": "echo", "description": "Echo the text", "inputSchema": schema(text="string")},
    {"name": "slow", "description": "Answer after ms", "inputSchema": schema(ms="integer", text="string")},
    {"name": "fail", "description": "Fail with a message", "inputSchema": schema(message="string")},
    {"name": "rpc_error", "description": "Answer with a JSON-RPC error", "inputSchema": schema()},
    {"name": "crash", "description": "Exit mid-call", "inputSchema": schema()},
    {"name": "hang", "description": "Never answer", "inputSchema": schema()},
    {"name": "garbage", "description": "Write a line that is not JSON", "inputSchema": schema()},
    {"name": "close_stdout", "description": "Close stdout mid-call", "inputSchema": schema()},
    {"name": "media", "description": "Text, image and resource content", "inputSchema": schema()},
    {"name": "ping_client", "description": "Ping the client", "inputSchema": schema()},
    {"name": "add_tool", "description": "Add the tool `late`", "inputSchema": schema()},
    {"name": "close_stdin", "description": "Close stdin mid-call", "inputSchema": schema()},
    {"name": "stop_reading", "description": "Stop reading stdin", "inputSchema": schema()},
    {"name": "flood", "description": "Write without a newline", "inputSchema": schema(stream="string", mb="integer")},
    {"name": "rendezvous", "description": "Answer once size calls are in flight", "inputSchema": schema(size="integer", text="string")},
]
if "--bad-tools" in args:
    tools.append({"name": 42, "description": "A number for a name", "inputSchema": schema()})
    tools.append({"name": "bad_schema", "description": "Not a schema", "inputSchema": {"type": 5}})

rendezvous_lock = threading.Condition()
rendezvous_arrived = []  # request ids in the order they arrived
rendezvous_full = [False]  # all have arrived; stays set until all answered


def rendezvous(request_id, size, text):
    """Waits until `size` calls are here, then answers in reverse order of
    arrival: the client must have had them all in flight at once."""
    with rendezvous_lock:
        rendezvous_arrived.append(request_id)
        if len(rendezvous_arrived) >= size:
            rendezvous_full[0] = True
        rendezvous_lock.notify_all()
        together = rendezvous_lock.wait_for(lambda: rendezvous_full[0], timeout=60)
        if not together:
            rendezvous_arrived.remove(request_id)
            send({"jsonrpc": "2.0", "id": request_id, "result": text_result("alone")})
            return
        # The last to arrive answers first; each waits for those after it.
        rendezvous_lock.wait_for(lambda: rendezvous_arrived[-1] == request_id)
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result(text)})
        rendezvous_arrived.pop()
        if not rendezvous_arrived:
            rendezvous_full[0] = False
        rendezvous_lock.notify_all()


def call_tool(request_id, name, arguments):
    if name == "echo":
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("echo: " + arguments["text"])})
    elif name == "slow":
        time.sleep(arguments["ms"] / 1000)
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result(arguments["text"])})
    elif name == "fail":
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result(arguments["message"], True)})
    elif name == "rpc_error":
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32001, "message": "the database is locked"}})
    elif name == "crash":
        sys.stderr.write("fake-server: segmentation fault (simulated)\n")
        sys.stderr.flush()
        os._exit(7)
    elif name == "hang":
        pass
    elif name == "garbage":
        with out_lock:
            sys.stdout.write("Traceback (most recent call last): this is not JSON\n")
            sys.stdout.flush()
    elif name == "close_stdout":
        sys.stderr.write("fake-server: closing stdout\n")
        sys.stderr.flush()
        with out_lock:
            # stderr too, so the client has read all of it once it sees
            # stderr end: what it reports cannot depend on timing.
            os.close(1)
            os.close(2)
        time.sleep(60)
    elif name == "flood":
        stream = sys.stdout if arguments["stream"] == "stdout" else sys.stderr
        chunk = "x" * (1024 * 1024)
        with out_lock:
            try:
                for _ in range(arguments["mb"]):
                    stream.write(chunk)
                stream.write("\n")
                stream.flush()
            except BrokenPipeError:
                return
        if stream is sys.stderr:
            send({"jsonrpc": "2.0", "id": request_id, "result": text_result("flooded")})
    elif name == "rendezvous":
        rendezvous(request_id, arguments["size"], arguments["text"])
    elif name == "media":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [
            {"type": "text", "text": "a picture:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "memo://note", "mimeType": "text/plain", "text": "remember"}},
        ]}})
    elif name == "ping_client":
        event = threading.Event()
        ping_id = "ping-%s" % request_id
        pending_pings[ping_id] = event
        send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
        answered = event.wait(5)
        send({"jsonrpc": "2.0", "id": request_id,
              "result": text_result("pong received" if answered else "no pong")})
    elif name == "add_tool":
        if not any(t["name"] == "late" for t in tools):
            tools.append({"name": "late", "description": "Added later", "inputSchema": schema()})
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("added")})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif name == "late":
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("late tool here")})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32602, "message": "Unknown tool: " + name}})


def handle(message):
    method = message.get("method")
    request_id = message.get("id")
    if method is None:
        event = pending_pings.pop(request_id, None)
        if event is not None:
            event.set()
        return
    if method == "initialize":
        if "--hang-initialize" in args:
            # Never answers, and outlives the end of stdin: only a kill ends it.
            time.sleep(120)
            sys.exit(0)
        version = protocol or message["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "fake-server", "version": "1.0.0"},
        }})
    elif method == "tools/list":
        start = int((message.get("params") or {}).get("cursor", "0"))
        page = tools[start:start + page_size]
        result = {"tools": page}
        if start + page_size < len(tools):
            result["nextCursor"] = str(start + page_size)
        stop_reading = "--close-stdin" in args and "nextCursor" not in result
        if stop_reading:
            # Before the answer: once the client has it, stdin already
            # refuses data, so its next write fails whatever the timing.
            # Shutting down reading (rather than closing) leaves the client
            # nothing to notice until it writes.
            stdin = socket.socket(fileno=0)
            stdin.shutdown(socket.SHUT_RD)
            stdin.detach()
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
        if stop_reading:
            time.sleep(30)
            sys.exit(0)
    elif method == "tools/call" and message["params"]["name"] == "close_stdin":
        # Here, on the only thread that reads stdin, so that closing it
        # really closes it (a read in progress would hold it open).
        sys.stderr.write("fake-server: closing stdin\n")
        sys.stderr.flush()
        os.close(0)
        time.sleep(60)
        sys.exit(0)
    elif method == "tools/call" and message["params"]["name"] == "stop_reading":
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("not reading")})
        time.sleep(60)
        sys.exit(0)
    elif method == "tools/call":
        params = message["params"]
        threading.Thread(
            target=call_tool,
            args=(request_id, params["name"], params.get("arguments") or {}),
            daemon=True,
        ).start()
    elif request_id is not None:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": "Method not found: " + method}})


for line in sys.stdin:
    if line.strip():
        handle(json.loads(line))
