"""What a server sends that the MCP SDK cannot read (a line that is not JSON-RPC, before `initialize` or during a call)
is logged by the SDK with a pydantic traceback. docs/mcp.md promises one line: the SDK's log is kept from the
terminal, and the run says, once, how many messages were skipped and the first of them. Run as a process: what the
SDK logs reaches the terminal through Python's own logging, which pytest would otherwise catch."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(os.path.dirname(HERE), "agent.py")
NOISY = (f"{sys.executable} -c \"print('not json at all', flush=True); import runpy, sys; sys.argv = ['notes']; "
         f"runpy.run_path('{os.path.join(HERE, 'mcp_server.py')}', run_name='__main__')\"")


def test_lines_a_server_sends_that_are_not_json_rpc_are_one_line_not_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, AGENT, "--tools", "--mcp", NOISY], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "delete_note" in done.stdout
    assert "Traceback" not in done.stderr and "pydantic" not in done.stderr
    [said] = done.stderr.strip().splitlines()
    assert said.startswith("warning: an MCP server sent 1 message the MCP SDK could not read, skipped: ")
    assert "not json at all" in said
