"""`errors.require`: an extra's package that is absent is "not installed"; one that is there but fails to import says
so with its own first line (a Ray actor running another Python once reported an installed vLLM as missing)."""

from __future__ import annotations

import sys

import pytest

from evalsuite.errors import MissingExtraError, require


@pytest.fixture
def packages(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("evalsuite_probe_")]:
        del sys.modules[name]


def test_an_absent_package_is_not_installed_and_names_its_extra(packages):
    with pytest.raises(MissingExtraError) as raised:
        require("evalsuite_probe_absent.engine", "vllm", "the vllm backend")
    assert raised.value.message == "the vllm backend needs the Python package 'evalsuite_probe_absent', which is not installed."
    assert "evalsuite[vllm]" in raised.value.hint


def test_a_package_whose_own_dependency_is_missing_says_it_is_installed_and_why_it_fails(packages):
    (packages / "evalsuite_probe_broken.py").write_text("import evalsuite_probe_its_dependency\n")
    with pytest.raises(MissingExtraError) as raised:
        require("evalsuite_probe_broken", "dense", "dense retrieval")
    assert raised.value.message == (
        "dense retrieval needs the Python package 'evalsuite_probe_broken', which is installed but does not import "
        "(No module named 'evalsuite_probe_its_dependency')."
    )


def test_a_package_that_raises_import_error_inside_says_so_in_one_line(packages):
    (packages / "evalsuite_probe_raises.py").write_text(
        "raise ImportError('libfoo.so: cannot open shared object file\\nsecond line')\n"
    )
    with pytest.raises(MissingExtraError) as raised:
        require("evalsuite_probe_raises", "hf", "the hf backend")
    assert raised.value.message.endswith("which is installed but does not import (libfoo.so: cannot open shared object file).")


def test_an_installed_package_is_returned(packages):
    (packages / "evalsuite_probe_fine.py").write_text("VALUE = 3\n")
    assert require("evalsuite_probe_fine", "hf", "x").VALUE == 3
