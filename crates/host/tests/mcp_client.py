"""A real MCP client (the Python `mcp` package) against our server, for the Rust tests.

Not a test on its own: the Rust tests (crates/host/tests/mcp.rs,
crates/cli/tests/mcp.rs) run it and check what it prints.

    python mcp_client.py stdio COMMAND ARG...     spawn the server, talk over stdio
    python mcp_client.py http URL TOKEN           streamable HTTP with a bearer token

It lists the tools, calls get_ticket {"id": 101}, then delete_ticket (refused
when the task does not allow it), no_such_tool, get_ticket on a ticket that
does not exist and get_ticket with an id that is no integer, and prints one
JSON object.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def call_summary(result):
    return {"isError": bool(result.is_error), "text": text_of(result), "structured": result.structured_content}


async def run(server):
    async with Client(server) as client:
        listed = await client.list_tools()
        tools = {tool.name: {"inputSchema": tool.input_schema, "description": tool.description} for tool in listed.tools}
        got = await client.call_tool("get_ticket", {"id": 101})
        refused = await client.call_tool("delete_ticket", {"id": 101})
        unknown = await client.call_tool("no_such_tool", {})
        missing = await client.call_tool("get_ticket", {"id": 999999})
        wrong = await client.call_tool("get_ticket", {"id": "abc"})
        return {
            "protocol": client.protocol_version,
            "instructions": client.instructions,
            "tools": tools,
            "get_ticket": call_summary(got),
            "delete_ticket": call_summary(refused),
            "no_such_tool": call_summary(unknown),
            "missing_ticket": call_summary(missing),
            "wrong_type": call_summary(wrong),
        }


def main():
    mode = sys.argv[1]
    if mode == "stdio":
        server = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    elif mode == "http":
        url, token = sys.argv[2], sys.argv[3]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        server = streamable_http_client(url, http_client=http)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(asyncio.run(run(server))))


if __name__ == "__main__":
    main()
