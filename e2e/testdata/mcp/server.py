#!/usr/bin/env python3
"""A minimal MCP server over stdio for lane's tests: one tool, `probe`.

It appends the method of every message it receives to the file named by
its first argument, so a test can tell that an agent CLI started it and
listed its tools (or called one), and answers as MCP's stdio transport
says: one JSON-RPC message a line.
"""
import json
import sys

log = open(sys.argv[1], "a", buffering=1)
TOOLS = [{
    "name": "probe",
    "description": "Answers with a fixed sentence.",
    "inputSchema": {"type": "object", "properties": {}},
}]


def answer(req):
    method, params = req.get("method"), req.get("params") or {}
    if method == "initialize":
        return {"result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "lane-probe", "version": "1"},
        }}
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": "probe answered"}]}}
    return {"error": {"code": -32601, "message": "method not found: %s" % method}}


for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    log.write("%s\n" % req.get("method"))
    if "id" not in req or "method" not in req:
        continue  # a notification, or an answer to a request never sent
    msg = {"jsonrpc": "2.0", "id": req["id"]}
    msg.update(answer(req))
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()
