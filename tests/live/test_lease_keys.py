"""Every spelling of one file is one lease key (issue #25): symlinks inside the working tree,
``.``/``..`` (applied after symlinks, as the file system does), repeated and trailing ``/``,
absolute or relative to any directory, and case where the file system folds it. The ground truth
is the file system itself (``os.path.samefile``), so the property holds on any host."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib import repo
from lib.live import leases
from tests.live.conftest import REPO_ID, make_repo

FILES = ["src/b.py", "src/sub/c.py", "README.md", "src/sub/deep/d.py"]
DIRS = ["src/", "src/sub/", "src/sub/deep/"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A repository with symlinks of every kind: to a directory (``lnk`` → ``src``), to a nested
    directory (``deep`` → ``src/sub``, where ``deep/..`` is ``src`` physically but the root
    lexically), to a file, a chain, a relative one inside ``src``, and one pointing outside."""
    base = tmp_path_factory.mktemp("keys")
    root = make_repo(base / "widget")
    for rel in FILES:
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as fh:
            fh.write("x\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("x\n")
    os.symlink("src", os.path.join(root, "lnk"))
    os.symlink(os.path.join(root, "src", "sub"), os.path.join(root, "deep"))
    os.symlink("src/b.py", os.path.join(root, "alias.py"))
    os.symlink("lnk", os.path.join(root, "chain"))
    os.symlink("../README.md", os.path.join(root, "src", "readme-link.md"))
    os.symlink(str(outside), os.path.join(root, "out"))
    os.symlink(root, os.path.join(str(base), "widget-link"))  # the whole tree reached through a link
    return root


# Ways to reach each real directory component: its name, or a symlink that lands on it.
ALIASES = {"src": ["src", "lnk", "chain", "deep/.."], "src/sub": ["src/sub", "deep", "lnk/sub", "chain/sub/deep/.."]}


@st.composite
def spelling(draw, root: str, target: str):
    """A spelling of repo-relative ``target`` (a file, or a directory ending in ``/``)."""
    is_dir = target.endswith("/")
    parts = [p for p in target.strip("/").split("/")]
    # choose an alias for the longest aliased directory prefix
    prefix_len = 0
    for n in (2, 1):
        if "/".join(parts[:n]) in ALIASES and len(parts) >= n:
            prefix_len = n
            break
    head = draw(st.sampled_from(ALIASES["/".join(parts[:prefix_len])])) if prefix_len else ""
    rest = parts[prefix_len:]
    segs = ([head] if head else []) + rest
    noisy = []
    for i, seg in enumerate(segs):
        noisy.append(seg)
        if is_dir or i < len(segs) - 1:  # "file/." is not a spelling of a file (ENOTDIR)
            noisy.extend(draw(st.lists(st.just("."), max_size=2)))
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    rel = draw(st.sampled_from(["", "./", "lnk/../", "deep/../../", "src/sub/../../"])) + sep.join(noisy)
    if is_dir:
        rel += draw(st.sampled_from(["/", "//", "/.", ""]))
    if repo.folds_case(root) and draw(st.booleans()):
        rel = rel.swapcase()
    base = draw(st.sampled_from(["root", "src", "sub", "abs", "abs-link", "parent"]))
    if base == "abs":
        return rel, None, os.path.join(root, rel)
    if base == "abs-link":
        return rel, None, os.path.join(os.path.dirname(root), "widget-link", rel)
    cwd = {"root": root, "src": os.path.join(root, "src"), "sub": os.path.join(root, "src", "sub"),
           "parent": os.path.dirname(root)}[base]
    up = {"root": "", "src": "../", "sub": "../../", "parent": "widget/"}[base]
    return rel, cwd, up + rel


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_spelling_of_one_file_or_directory_is_one_lease_key(tree, data):
    target = data.draw(st.sampled_from(FILES + DIRS))
    _, cwd, path = data.draw(spelling(tree, target))
    where = leases.resolve(path, cwd)
    assert where == {"repo": REPO_ID, "path": target}, (path, cwd)
    full = path if cwd is None else os.path.join(cwd, path)
    assert os.path.samefile(full, os.path.join(tree, target))  # the ground truth agrees


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.sampled_from(FILES + DIRS), b=st.sampled_from(FILES + DIRS), data=st.data())
def test_spellings_share_a_key_exactly_when_they_name_the_same_file(tree, a, b, data):
    _, ca, pa = data.draw(spelling(tree, a))
    _, cb, pb = data.draw(spelling(tree, b))
    ka, kb = leases.resolve(pa, ca), leases.resolve(pb, cb)
    same = os.path.samefile(pa if ca is None else os.path.join(ca, pa), pb if cb is None else os.path.join(cb, pb))
    assert (leases.resource_key(ka["repo"], ka["path"]) == leases.resource_key(kb["repo"], kb["path"])) == same


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_directory_lease_covers_every_spelling_of_what_is_under_it(tree, data):
    d = data.draw(st.sampled_from(DIRS))
    f = data.draw(st.sampled_from([x for x in FILES if x.startswith(d)]))
    _, cd, pd = data.draw(spelling(tree, d))
    _, cf, pf = data.draw(spelling(tree, f))
    lease = dict(leases.resolve(pd, cd), holder="alice", expires_at=2e9)
    view = {"leases": [lease], "store_time": 1e9, "refreshed_at": 1e9}
    hits = leases.conflicts_for_paths(view, "bob", [pf], cf, local_now=1e9)
    assert [h["path"] for h in hits] == [d]


def test_the_issue_walkaround_a_symlinked_directory_is_the_same_lease(tree):
    """With src/b.py held by alice, ``ln -s src lnk`` and ``lnk/b.py`` must not be free for bob."""
    assert leases.resolve("lnk/b.py", tree) == leases.resolve("src/b.py", tree) == {"repo": REPO_ID, "path": "src/b.py"}
    assert leases.resolve("alias.py", tree)["path"] == "src/b.py"        # a symlinked file: keyed by its target
    assert leases.resolve("deep/../b.py", tree)["path"] == "src/b.py"    # .. after a symlink, as the FS means it
    assert leases.resolve("src/readme-link.md", tree)["path"] == "README.md"
    assert leases.resolve(".", tree) == {"repo": REPO_ID, "path": "/"}
    assert leases.resolve("src/new-file.py", tree)["path"] == "src/new-file.py"  # not created yet: as given
    assert leases.resolve("lnk/new-dir/", tree)["path"] == "src/new-dir/"


def test_a_symlink_pointing_outside_the_repository_is_refused(tree, home, monkeypatch):
    import io

    import ctxlake

    assert leases.resolve("out/secret.py", tree) is None
    assert leases.locate(["out/secret.py", "src/b.py"], tree) == [("src/b.py", REPO_ID, "src/b.py")]
    monkeypatch.chdir(tree)
    out = io.StringIO()
    assert ctxlake.main(["lease", "claim", "out/secret.py"], out, out) == 2
    assert "out/secret.py is not inside a git repository" in out.getvalue()


def test_a_symlink_into_another_repository_is_keyed_by_that_repository(tree, tmp_path):
    other = make_repo(tmp_path / "other", origin="https://github.com/Example-Org/Other.git")
    link = os.path.join(tree, "vendor-other")
    os.symlink(other, link)
    try:
        assert leases.resolve("vendor-other/src/app.py", tree) == {"repo": "github.com/Example-Org/Other",
                                                                 "path": "src/app.py"}
    finally:
        os.unlink(link)


def test_case_spellings_are_one_key_only_where_the_file_system_folds_case(tree):
    upper = os.path.join(tree, "SRC", "B.py")
    if repo.folds_case(tree):
        assert leases.resolve(upper)["path"] == "src/b.py"
    else:  # a case-sensitive file system: SRC/B.py is another (absent) file, and keyed as such
        assert not os.path.exists(upper) and leases.resolve(upper)["path"] == "SRC/B.py"
