"""Acceptance cases 22–24 (docs/ctxctl.md, Tests): config discovery and precedence, deps
classification, byte stability."""
from __future__ import annotations

import json
import os

import pytest

from lib.code import config, deps


# -- 22. config -----------------------------------------------------------------------------------

def test_project_config_is_found_walking_up(ctxctl, fixture, write, project):
    path = fixture("sample.rs")
    write(".ctxctl/config.toml", "[general]\nshow_saved = false\n")
    os.makedirs(os.path.join(project, "sub", "deep"))
    r = ctxctl("outline", os.path.join(project, path), cwd=os.path.join(project, "sub", "deep"))
    assert r.code == 0 and "saved" not in r.out.lower()


def test_fold_threshold_folds_text_and_json_alike(ctxctl, fixture, write):
    path = fixture("sample.rs")
    write(".ctxctl/config.toml", "[outline]\nfold_threshold = 2\n")
    r = ctxctl("outline", path)
    assert "  ... [2 symbols omitted]" in r.out and "[4 symbols," in r.out
    doc = json.loads(ctxctl("outline", path, "--json").out)
    assert [s["name"] for s in doc["symbols"]] == ["add", "Point"] and doc["omitted"] == 2, doc
    write(".ctxctl/config.toml", "[outline]\nfold_threshold = 4\n")
    assert "omitted" not in json.loads(ctxctl("outline", path, "--json").out)


def test_a_json_outline_of_a_many_symbol_file_costs_less_than_the_file(ctxctl, write):
    """New-user report 5: ``outline --json`` of a 3000-symbol file was 91,068 tokens against
    6,210 for the file, while text stopped at 50 rows."""
    path = write("many.py", "".join(f"def f{i}(a, b=None):\n    \"\"\"Doc {i}.\"\"\"\n    return {i}\n"
                                    for i in range(3000)))
    doc = json.loads(ctxctl("outline", path, "--json", "--exact-tokens").out)
    assert len(doc["symbols"]) == 50 and doc["omitted"] == 2950
    assert doc["saved"]["tokens_after"] < doc["saved"]["tokens_before"] / 10, doc["saved"]


def test_project_value_overrides_global(ctxctl, fixture, write, tmp_path):
    path = fixture("sample.rs")
    glob = tmp_path / "xdg" / "ctxctl"
    glob.mkdir(parents=True)
    (glob / "config.toml").write_text("[outline]\nfold_threshold = 1\n")
    assert "[3 symbols omitted]" in ctxctl("outline", path).out
    write(".ctxctl/config.toml", "[outline]\nfold_threshold = 4\n")
    assert "omitted" not in ctxctl("outline", path).out


def test_explicit_config_wins_and_invalid_toml_exits_1(ctxctl, fixture, write):
    path = fixture("sample.rs")
    write(".ctxctl/config.toml", "[outline]\nfold_threshold = 4\n")
    write("extra.toml", "[outline]\nfold_threshold = 1\n")
    assert "[3 symbols omitted]" in ctxctl("outline", path, "--config", "extra.toml").out
    write("bad.toml", "[outline\n")
    r = ctxctl("outline", path, "--config", "bad.toml")
    assert r.code == 1 and "invalid config bad.toml" in r.err
    r = ctxctl("outline", path, "--config", "missing.toml")
    assert r.code == 1 and "failed to read config missing.toml" in r.err


def test_unknown_keys_are_errors_and_broken_discovered_files_are_skipped(ctxctl, fixture, write):
    path = fixture("sample.rs")
    write("typo.toml", "[outline]\nfold_treshold = 4\n")
    r = ctxctl("outline", path, "--config", "typo.toml")
    assert r.code == 1 and "unknown key `fold_treshold` in [outline]" in r.err
    write(".ctxctl/config.toml", "[nope]\n")
    r = ctxctl("outline", path)
    assert r.code == 0 and r.err.startswith("warning: ignoring config: invalid config")


def test_symlinked_project_config_is_followed(ctxctl, fixture, write, project, tmp_path):
    path = fixture("sample.rs")
    real = tmp_path / "shared-ctxctl"
    real.mkdir()
    (real / "config.toml").write_text("[general]\nshow_saved = false\n")
    os.symlink(real, os.path.join(project, ".ctxctl"))
    assert "saved" not in ctxctl("outline", path).out


def test_xdg_config_home_is_authoritative(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "ctxctl").mkdir(parents=True)
    (home / ".config" / "ctxctl" / "config.toml").write_text("[outline]\nfold_threshold = 1\n")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "empty")}
    assert config.load(str(tmp_path), env=env).outline.fold_threshold == 50
    assert config.load(str(tmp_path), env={"HOME": str(home)}).outline.fold_threshold == 1


def test_arrays_replace_whole():
    merged = config.merge(config.Config(), {"paths": {"ignore": ["vendor"]}})
    assert merged.paths.ignore == ("vendor",)
    with pytest.raises(ValueError):
        config.merge(config.Config(), {"exec": {"head_lines": "3"}})


# -- 23. deps ---------------------------------------------------------------------------------------

def rows(run):
    return [(i["target"], i["kind"]) for i in json.loads(run.out)["imports"]]


def test_deps_rust(ctxctl, fixture):
    path = fixture("deps/deps.rs")
    r = ctxctl("deps", path, "--json")
    assert rows(r) == [("frontend", "local"), ("crate::lib::helper", "local"), ("frontend::api", "local"),
                       ("serde::Deserialize", "external"), ("std::collections::HashMap", "external")]
    text = ctxctl("deps", path).out
    assert text.startswith("# deps.rs  [5 imports, ")
    assert "  local     frontend                     L:1\n" in text


def test_deps_python_with_ignore(ctxctl, fixture, write):
    path = fixture("deps/deps.py", "pkg/deps.py")
    write(".ctxctl/config.toml", '[paths]\nignore = ["vendor_helpers"]\n')
    assert rows(ctxctl("deps", path, "--json")) == [
        ("os", "external"), ("sys", "external"), ("numpy", "external"), ("typing", "external"), (".", "local"),
        (".vendor_helpers", "ignored"), (".models", "local"), ("myproject.models", "external")]


def test_deps_python_probes_local_modules_and_shadowing(ctxctl, write):
    write("app/models.py", "x = 1\n")
    write("tools/os.py", "x = 1\n")
    path = write("tools/main.py", "import app.models\nimport os\nimport json\n")
    assert rows(ctxctl("deps", path, "--json")) == [("app.models", "local"), ("os", "unresolved"),
                                                     ("json", "external")]


def test_deps_typescript(ctxctl, fixture):
    path = fixture("deps/deps.ts", "src/deps.ts")
    assert rows(ctxctl("deps", path, "--json")) == [
        ("express", "external"), ("./helpers", "local"), ("../lib/util", "local"), ("./types", "local"),
        ("path", "external"), ("os", "external"), ("./helpers2", "local")]


def test_deps_ignore_glob_with_slash_matches_the_project_relative_path(ctxctl, write):
    write(".ctxctl/config.toml", '[paths]\nignore = ["src/vendor/*"]\n')
    path = write("src/vendor/mod.ts", "import { h } from './helper';\nimport x from 'left-pad';\n")
    assert rows(ctxctl("deps", path, "--json")) == [("./helper", "ignored"), ("left-pad", "external")]


def test_deps_is_independent_of_the_working_directory(ctxctl, write, project):
    write("app/models.py", "x = 1\n")
    path = write("app/main.py", "import app.models\n")
    os.makedirs(os.path.join(project, "elsewhere"))
    a = ctxctl("deps", os.path.join(project, path), "--json", cwd=os.path.join(project, "elsewhere"))
    assert rows(a) == [("app.models", "local")]


@pytest.mark.parametrize("name,src,expected", [
    ("a.go", 'package a\nimport (\n\t"fmt"\n\tm "math"\n)\n', [("fmt", "external"), ("math", "external")]),
    ("A.java", "import java.util.List;\nimport static java.lang.Math.PI;\nimport com.x.*;\nclass A {}\n",
     [("java.util.List", "external"), ("java.lang.Math.PI", "external"), ("com.x.*", "external")]),
    ("a.c", '#include <stdio.h>\n#include "util.h"\n', [("stdio.h", "external"), ("util.h", "local")]),
    ("a.cpp", '#include <vector>\nusing namespace std;\nusing std::vector;\nusing Alias = int;\n',
     [("vector", "external"), ("std", "external"), ("std::vector", "external")]),
    ("a.cs", "using System;\nusing static System.Math;\nusing Alias = System.Text;\nclass A {}\n",
     [("System", "external"), ("System.Math", "external")]),
    ("a.rb", "require 'json'\nrequire_relative 'helpers'\n", [("json", "external"), ("helpers", "local")]),
    ("a.lua", 'local json = require "json"\nlocal h = require("./helpers")\n',
     [("json", "external"), ("./helpers", "local")]),
    ("a.md", "# nothing\n", []),
])
def test_deps_other_languages(ctxctl, write, name, src, expected):
    assert rows(ctxctl("deps", write(name, src), "--json")) == expected


def test_glob_matching_is_polynomial_and_segment_scoped():
    assert deps.glob_match("*a*a*a*a*a*a*a*a*a*a*b", "a" * 200) is False
    assert deps.ignored("src/target/x", ["target"]) and not deps.ignored("src/targets/x", ["target"])
    assert deps.ignored("a/node_modules", ["node_*"])


# -- 24. byte stability -------------------------------------------------------------------------

def test_json_outputs_are_byte_stable(ctxctl, fixture):
    path = fixture("sample.rs")
    for argv in (("outline", path, "--json"), ("deps", path, "--json"),
                 ("exec", "printf 'a\\nb\\nerror: c\\n'", "--json")):
        assert ctxctl(*argv).out == ctxctl(*argv).out


def test_deps_in_site_packages_labels_the_files_own_package_local(ctxctl, tmp_path):
    """New-user report 4: ``deps`` on boto3/session.py in site-packages (no ``.git``) called
    ``boto3.utils`` external. The real installed boto3, copied into a tree with no ``.git``:
    its own modules are local, botocore (another package beside it) and the stdlib external."""
    import shutil

    import boto3

    site = tmp_path / "site-packages"
    shutil.copytree(os.path.dirname(boto3.__file__), site / "boto3")
    (site / "botocore").mkdir()
    (site / "botocore" / "__init__.py").write_text("")
    (site / "botocore" / "session.py").write_text("")
    kinds = dict(rows(ctxctl("deps", str(site / "boto3" / "session.py"), "--json", cwd=str(tmp_path))))
    assert kinds["boto3"] == kinds["boto3.utils"] == kinds["boto3.exceptions"] == "local", kinds
    assert kinds[".resources.factory"] == "local", kinds
    assert kinds["botocore.session"] == kinds["os"] == kinds["copy"] == "external", kinds
