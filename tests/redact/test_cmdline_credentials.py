"""Passwords and tokens given on a command line (issue #17, and a new user's report: ``mysql
-pX``, ``sshpass -p X``, ``docker login -p X`` and ``redis-cli -a X`` reached the lake marked
clean). The corpus is the tldr pages' examples (``tests/support/tldr_commands.py``): every
example whose placeholder names a secret, rendered with a generated secret, must lose it in the
Bash command an agent runs; the examples without one must come out as they went in, within the
measured rate. Half the pages were held out while the rules were written."""
from __future__ import annotations

import json

import pytest

from lib import envelope, redact
from tests.support import tldr_commands

@pytest.mark.parametrize("command, secret", [
    ("mysql -u root -pQz8Lm3Vn6Rt1 prod", "Qz8Lm3Vn6Rt1"),
    ("sshpass -p Jd6Fs3Ga8Hk1 ssh host", "Jd6Fs3Ga8Hk1"),
    ("docker login -u me -p Rt5Yu8Io1Pa4 ghcr.io", "Rt5Yu8Io1Pa4"),
    ("redis-cli -a Vb3Nm6Qw9Er2 ping", "Vb3Nm6Qw9Er2"),
    ("sudo /usr/bin/mysqldump -uroot -p'Harbor-Maple42' db > d.sql", "Harbor-Maple42"),
    ("ldapsearch -x -D cn=admin -w Sunset99Copper -b dc=x", "Sunset99Copper"),
    ("smbclient //srv/share -U alice%Lantern77x", "Lantern77x"),
    ("openssl pkcs12 -export -passout pass:Violet123abc -out a.p12", "Violet123abc"),
    ("argocd login --insecure --username admin --password Falcon-Orbit31 cd.example.com", "Falcon-Orbit31"),
    ("aider --model gpt --api-key abcDEF123ghi", "abcDEF123ghi"),
    ("choco upgrade pkg -u alice -p 0ii46xS0DGHMni", "0ii46xS0DGHMni"),
    ("secretsdump.py corp.local/admin:Winter2024x@10.0.0.5", "Winter2024x"),
    ("impacket-getTGT corp.local/svc_sql:Quartz81Ember -dc-ip 10.0.0.1", "Quartz81Ember"),
    # pytest lines with ".py " before it: each is ruled out by its missing "/" and ":"
    ("tests/test_a.py ....\ntests/test_b.py F.\nsecretsdump.py corp/admin:Winter2024y@dc01", "Winter2024y"),
    ("htpasswd -bc /etc/nginx/.htpasswd alice Maple-Copper63", "Maple-Copper63"),
    ("tasklist /s srv01 /u admin /p Copper55Harbor", "Copper55Harbor"),
])
def test_the_reported_command_lines_lose_their_secret(command, secret):
    # raw, JSON-escaped, and compact as the hook stores a tool's input (a new user's report: the
    # tool-specific rules missed a tool that was the first word after the compact key)
    for text in (command, json.dumps({"command": command}), envelope.to_text({"command": command})):
        out, outcome = redact.scrub(text, is_tool_output=True)
        assert secret not in out, out
        assert outcome.status == "redacted"
        out, _ = redact.scrub(text)  # a prompt holding the same command
        assert secret not in out, out


@pytest.mark.parametrize("command", [
    "docker run -p 8080:80 nginx", "ssh -p 2222 host", "grep -P '\\d+' f", "cp -a src dst",
    "mysql -u root -p prod", "redis-cli -a $REDIS_PASSWORD ping", "docker login -u me --password-stdin",
    "ldapsearch -x -W -b dc=x", "zip -r out.zip dir", "nxc ssh 10.0.0.2 -u users.txt -p passwords.txt",
    "openssl enc -pass env:KEY -in f", "dropdb --no-password mydb", "psql --password-file=~/.pgpass",
])
def test_command_lines_without_a_literal_secret_stay_as_they_are(command):
    assert redact.scrub(command, is_tool_output=True)[0] == command


def test_tldr_examples_recall_and_false_positives():
    """Measured figures at the time of writing (docs/security.md, ``bench/redact_corpus.py``):
    tuning half 69.5 % recall, held-out half 61.2 %, 0.7–1.0 % of secret-free examples touched. The
    floors here sit just below them so a regression fails; the misses left are positional
    secrets that no option names (``vault login TOKEN``, ``echo PASS | tool --password-stdin``)."""
    m = tldr_commands.measure(redact.scrub)
    for half, floor in (("tuning", 0.68), ("held_out", 0.58)):
        r = m[half]
        assert r["caught"] / r["positives"] >= floor, (half, r)
        assert r["touched"] / r["negatives"] <= 0.015, (half, r)
