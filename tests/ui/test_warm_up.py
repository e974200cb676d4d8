"""The window opens without torch, and its background warm-up loads torch and the engine before the first Start."""

import subprocess
import sys


def test_the_window_module_loads_no_torch_and_the_warm_up_loads_the_engine():
    code = (
        "import sys; from style_studio.ui.app import _warm_up; "
        "assert 'torch' not in sys.modules, 'the window module imported torch'; "
        "_warm_up(); "
        "assert 'torch' in sys.modules and 'style_studio.core.run.engine' in sys.modules, 'the warm-up loaded nothing'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=None)
