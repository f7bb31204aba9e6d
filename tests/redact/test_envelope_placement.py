

def test_input_hash_is_of_the_redacted_input_so_a_short_secret_cannot_be_brute_forced():
    from lib.envelope import Builder, sha256_hex

    b = Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s")
    env = b.make("tool_call", tool={"name": "Bash", "input": {"command": "echo SSN 123-45-6789"}})
    assert "123-45-6789" not in env["tool"]["input"]
    assert env["tool"]["input_hash"] == sha256_hex(env["tool"]["input"])
