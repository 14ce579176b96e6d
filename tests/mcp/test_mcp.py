"""`troupe mcp` driven by a stock MCP client (the `mcp` package from PyPI).

Each test spawns the server over stdio with the repository as its root
(`TROUPE_BIN`, else target/debug/troupe), initializes, and calls tools on the
example packs and on broken inputs. Every successful `structuredContent` is
checked against the tool's `outputSchema` (by the client itself, and again
here with jsonschema); every failure is `isError` with diagnostics.
"""

import os
import pathlib
import shutil
import tempfile

import anyio
import jsonschema
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
NEGOTIATION = "examples/packs/everyday-negotiation"
HARBOR = "examples/packs/harbor-lights"
ERROR_KINDS = {
    "invalid", "refused", "ended", "not_found", "io", "unsupported", "limit", "runtime", "evaluation",
}


def binary():
    given = os.environ.get("TROUPE_BIN")
    path = pathlib.Path(given) if given else ROOT / "target" / "debug" / "troupe"
    if not path.is_absolute():
        path = ROOT / path
    if not path.is_file():
        if os.environ.get("CI"):
            raise AssertionError("the troupe binary is missing (set TROUPE_BIN)")
        pytest.skip("no troupe binary (cargo build, or set TROUPE_BIN)")
    return str(path)


def session(body, root=ROOT):
    """Runs `body(client, tools)` against a fresh server; returns its result."""
    params = StdioServerParameters(command=binary(), args=["mcp", "--root", str(root)], cwd=str(ROOT))

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                init = await client.initialize()
                assert init.protocol_version == "2025-06-18"
                listed = await client.list_tools()
                tools = {t.name: t for t in listed.tools}
                return await body(client, tools)

    return anyio.run(main)


def ok(tools, name, result):
    """A successful result: not isError, a text summary, and a structuredContent
    that fits the tool's outputSchema."""
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name}: {text}"
    assert text.strip(), f"{name} gave no text summary"
    jsonschema.validate(result.structured_content, tools[name].output_schema)
    return result.structured_content


def failed(result, code=None):
    """A failed result: isError with the error document and its diagnostics."""
    assert result.is_error, result.structured_content
    doc = result.structured_content
    assert doc["error"] in ERROR_KINDS
    assert isinstance(doc["message"], str) and doc["message"]
    if code is not None:
        assert code in [d["code"] for d in doc["diagnostics"]], doc
    return doc


def test_initialize_lists_every_tool_with_schemas():
    async def body(client, tools):
        return tools

    tools = session(body)
    assert sorted(tools) == sorted(
        ["check", "test", "compile", "state", "knows", "ended", "explain", "render", "cel_check", "run"]
    )
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)


def test_every_tool_on_the_example_packs():
    async def body(client, tools):
        out = {}
        out["check"] = ok(tools, "check", await client.call_tool("check", {"paths": [NEGOTIATION, HARBOR]}))
        out["test"] = ok(tools, "test", await client.call_tool("test", {"pack": NEGOTIATION}))
        out["compile"] = ok(tools, "compile", await client.call_tool("compile", {"pack": NEGOTIATION}))
        out["state"] = ok(
            tools, "state", await client.call_tool("state", {"pack": HARBOR, "session": "inn.jsonl", "at": "m3"})
        )
        out["initial"] = ok(tools, "state", await client.call_tool("state", {"pack": NEGOTIATION}))
        out["knows"] = ok(
            tools,
            "knows",
            await client.call_tool(
                "knows", {"pack": HARBOR, "session": f"{HARBOR}/sessions/inn.jsonl", "message": "m2", "part": 0}
            ),
        )
        out["ended"] = ok(tools, "ended", await client.call_tool("ended", {"pack": HARBOR, "session": "walkthrough.jsonl"}))
        out["explain"] = ok(
            tools, "explain", await client.call_tool("explain", {"pack": HARBOR, "session": "inn.jsonl", "at": "m3"})
        )
        out["render"] = ok(
            tools,
            "render",
            await client.call_tool(
                "render", {"pack": HARBOR, "text": "Hello {{user}}", "session": "inn.jsonl", "at": "m3", "char": "mara"}
            ),
        )
        out["cel"] = ok(
            tools, "cel_check", await client.call_tool("cel_check", {"expr": "state.patience > 3", "pack": NEGOTIATION})
        )
        out["cel_decls"] = ok(
            tools, "cel_check", await client.call_tool("cel_check", {"expr": "x * 2", "decls": {"x": "int"}})
        )
        out["run"] = ok(
            tools,
            "run",
            await client.call_tool(
                "run",
                {"pack": NEGOTIATION, "lines": ["Hello Marco!", "I can offer 7,000 cash today."], "seed": 7},
            ),
        )
        return out

    out = session(body)
    assert out["check"]["valid"] is True and out["check"]["errors"] == 0
    assert out["test"]["status"] == "PASS" and out["test"]["exit_code"] == 0
    assert out["compile"]["bytes"] > 0 and out["compile"]["out"] is None
    assert out["state"]["at"] == "m3" and out["state"]["state"]["trust.ines"] == 50
    assert out["initial"]["at"] is None and out["initial"]["turn"] == 0
    assert "investigator" in out["knows"]["knows"]
    assert out["ended"]["at"]
    assert out["explain"]["active"] == sum(1 for e in out["explain"]["entries"] if e["active"])
    assert out["render"]["text"] == "Hello Player"
    assert out["cel"] == {"type": "bool", "scenario": "used_car_negotiation"}
    assert out["cel_decls"] == {"type": "int", "scenario": None}
    assert len(out["run"]["turns"]) == 2 and out["run"]["unplayed"] == 0


def test_broken_inputs_are_tool_errors_with_diagnostics():
    async def body(client, tools):
        out = {}
        out["check"] = await client.call_tool("check", {"paths": ["examples/broken/cel-syntax.bundle.json"]})
        out["test"] = await client.call_tool("test", {"pack": "examples/broken/unknown-variable"})
        out["state"] = await client.call_tool("state", {"pack": "examples/broken/cel-type.bundle.json"})
        out["missing"] = await client.call_tool("state", {"pack": "examples/no-such-pack"})
        out["at"] = await client.call_tool("ended", {"pack": HARBOR, "session": "inn.jsonl", "at": "m999"})
        out["cel"] = await client.call_tool("cel_check", {"expr": "state.patience + 'x'", "pack": NEGOTIATION})
        out["template"] = await client.call_tool("render", {"pack": NEGOTIATION, "text": "{{"})
        out["preset"] = await client.call_tool("run", {"pack": NEGOTIATION, "lines": ["hi"], "difficulty": "nope"})
        return out

    out = session(body)
    check = out["check"]
    assert check.is_error and check.structured_content["valid"] is False
    assert check.structured_content["diagnostics"][0]["code"] == "CEL_SYNTAX"
    assert out["test"].is_error and out["test"].structured_content["exit_code"] != 0
    failed(out["state"], "CEL_TYPE")
    failed(out["missing"], "MISSING_FILE")
    assert failed(out["at"])["error"] == "not_found"
    failed(out["cel"], "CEL_TYPE")
    failed(out["template"], "TEMPLATE_SYNTAX")
    assert failed(out["preset"])["error"] == "refused"


def test_paths_outside_the_root_are_refused_and_nothing_is_written_outside():
    outside = pathlib.Path(tempfile.mkdtemp(prefix="troupe-mcp-outside-"))
    root = pathlib.Path(tempfile.mkdtemp(prefix="troupe-mcp-root-"))
    try:
        shutil.copytree(ROOT / NEGOTIATION, root / "pack")
        shutil.copytree(ROOT / NEGOTIATION, outside / "pack")
        (root / "escape").symlink_to(outside)

        async def body(client, tools):
            out = {}
            out["dotdot"] = await client.call_tool("check", {"paths": ["../" + outside.name + "/pack"]})
            out["absolute"] = await client.call_tool("state", {"pack": str(outside / "pack")})
            out["link"] = await client.call_tool("test", {"pack": "escape/pack"})
            out["write_out"] = await client.call_tool("compile", {"pack": "pack", "out": "escape/out.troupe"})
            out["write_up"] = await client.call_tool("compile", {"pack": "pack", "out": "../out.troupe"})
            out["write_in"] = ok(tools, "compile", await client.call_tool("compile", {"pack": "pack", "out": "pack.troupe"}))
            out["reopen"] = ok(tools, "check", await client.call_tool("check", {"paths": ["pack.troupe"]}))
            return out

        out = session(body, root=root)
        for name in ["dotdot", "absolute", "link", "write_out", "write_up"]:
            doc = failed(out[name], "PATH_TRAVERSAL")
            assert doc["error"] == "refused", name
        assert list(outside.iterdir()) == [outside / "pack"]
        assert not (root.parent / "out.troupe").exists()
        assert (root / "pack.troupe").is_file() and out["write_in"]["out"] == "pack.troupe"
        assert out["reopen"]["valid"] is True
    finally:
        shutil.rmtree(outside)
        shutil.rmtree(root)


def test_protocol_misuse_is_a_jsonrpc_error():
    async def body(client, tools):
        errors = []
        for name, args in [
            ("no_such_tool", {}),
            ("check", {}),
            ("check", {"paths": "not a list"}),
            ("state", {"pack": NEGOTIATION, "unknown": 1}),
        ]:
            try:
                await client.call_tool(name, args)
            except MCPError as e:
                errors.append(e.code)
        return errors

    assert session(body) == [-32602, -32602, -32602, -32602]


def test_resources_are_the_spec_codes_and_schemas():
    async def body(client, tools):
        listed = await client.list_resources()
        uris = {str(r.uri) for r in listed.resources}
        section = await client.read_resource("troupe://format/8.6")
        code = await client.read_resource("troupe://validation/CEL_TYPE")
        schema = await client.read_resource("troupe://schemas/output/run.schema.json")
        try:
            await client.read_resource("troupe://format/999")
            missing = None
        except MCPError as e:
            missing = e.code
        return uris, section, code, schema, missing

    uris, section, code, schema, missing = session(body)
    assert {"troupe://format", "troupe://validation", "troupe://format/20", "troupe://schemas/npc.schema.json"} <= uris
    assert section.contents[0].text.startswith("### 8.6 ")
    assert code.contents[0].text.startswith("### CEL_TYPE")
    assert '"$id"' in schema.contents[0].text
    assert missing is not None
