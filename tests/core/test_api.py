"""The core's API (style_studio.core): every name it offers resolves, and naming the light ones loads no torch."""

import subprocess
import sys

import style_studio.core as core


def test_every_name_the_api_offers_resolves():
    for name in core.__all__:
        assert getattr(core, name) is not None, name


def test_settings_progress_and_the_run_plan_load_without_torch():
    code = (
        "import sys; from style_studio.core import Progress, RunPlan, Settings, plan_run, settings; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_api_offers_no_module_of_the_inner_layers():
    """io, network, objective, run and jobs are offered by name only, but for the door every surface renders
    through (jobs.door): the import contracts cannot be bypassed."""
    from types import ModuleType

    modules = {name for name in core.__all__ if isinstance(getattr(core, name), ModuleType)}
    assert modules == {"errors", "progress", "settings", "door"}
