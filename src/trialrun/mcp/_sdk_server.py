"""A scripted server served by the official MCP SDK: its low-level `Server`, with handlers that answer from the
script (`_script.ScriptState`). The SDK speaks the protocol (the handshake, every protocol version it knows, JSON-RPC
errors, validation of requests); trialrun only decides the answers.
"""

from __future__ import annotations

from typing import Any

from ._script import Answer, ScriptState
from ._sdk import sdk

__all__ = ["build_server", "result_of"]


def result_of(answer: Answer) -> Any:
    """An answer as the SDK's CallToolResult (a protocol error is raised as the SDK's MCPError, which it sends as a
    JSON-RPC error)."""
    mcp, types = sdk()
    if answer.protocol_error is not None:
        raise mcp.MCPError(answer.protocol_error[0], answer.protocol_error[1])
    data: dict[str, Any] = {"content": list(answer.content), "isError": answer.is_error}
    if answer.structured is not None:
        data["structuredContent"] = answer.structured
    return types.CallToolResult.model_validate(data)


def build_server(state: ScriptState) -> Any:
    """The SDK's low-level Server answering as `state`'s script says, for one trial."""
    import anyio

    mcp, types = sdk()
    from mcp.server.lowlevel import Server

    script = state.server
    tools = [types.Tool(name=t.name, description=t.description or None, input_schema=t.input_schema)
             for t in script.tools]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        answer = state.answer(params.name, dict(params.arguments or {}))
        if answer.delay_s:
            await anyio.sleep(answer.delay_s)
        return result_of(answer)

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if script.resources:
        async def list_resources(ctx: Any, params: Any) -> Any:
            return types.ListResourcesResult(resources=[
                types.Resource(uri=r.uri, name=r.name, description=r.description or None, mime_type=r.mime_type)
                for r in script.resources])

        async def read_resource(ctx: Any, params: Any) -> Any:
            found = next((r for r in script.resources if r.uri == str(params.uri)), None)
            if found is None:
                raise mcp.MCPError(-32002, f"Resource not found: {params.uri}")
            return types.ReadResourceResult(contents=[
                types.TextResourceContents(uri=found.uri, mime_type=found.mime_type, text=found.text)])

        handlers.update(on_list_resources=list_resources, on_read_resource=read_resource)
    if script.prompts:
        async def list_prompts(ctx: Any, params: Any) -> Any:
            return types.ListPromptsResult(prompts=[
                types.Prompt(name=p.name, description=p.description or None,
                             arguments=[types.PromptArgument(name=a, required=True) for a in p.arguments])
                for p in script.prompts])

        async def get_prompt(ctx: Any, params: Any) -> Any:
            found = next((p for p in script.prompts if p.name == params.name), None)
            if found is None:
                raise mcp.MCPError(-32602, f"Unknown prompt: {params.name}")
            text = found.render(dict(params.arguments or {}))
            return types.GetPromptResult.model_validate(
                {"description": found.description or None,
                 "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    server = Server(script.name, version=script.version, instructions=script.instructions, **handlers)
    server.middleware.clear()  # the SDK's OpenTelemetry span per message: nothing here exports them
    return server
