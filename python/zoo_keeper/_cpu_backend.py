"""llama.cpp's CPU backend as this process runs it.

The package carries llama.cpp's CPU backend in every x86-64 variant and
loads the best one this CPU and operating system allow when the first model
loads; ``ZOO_CPU_VARIANT`` (environment) or ``cpu_variant`` (an agent's
config, a ``Model``'s parameter) force one. A process runs one variant.
"""

from __future__ import annotations

import json
from typing import Any, Dict

from . import _native


def backend_info() -> Dict[str, Any]:
    """The CPU backend in use, loading it if no model has been loaded yet.

    Keys (the same in every language): ``cpu_variant`` (e.g. ``"zen4"``,
    ``"haswell"``; ``"x64"`` is the portable one), ``chosen_by``
    (``"best"``, ``"config"``, ``"environment"``), ``features`` (what that
    backend was built with, e.g. ``"AVX2"``), ``usable`` (the variants this
    machine allows, best first), ``refused`` (``{"variant", "reason"}`` for
    the others) and ``directory`` (where the variant was loaded from).

    Raises ``InvalidConfigError`` when ``ZOO_CPU_VARIANT`` names a variant
    that is unknown or that this machine cannot run, ``ZooIOError`` when the
    backend files are missing from the package.
    """
    info: Dict[str, Any] = json.loads(_native.backend_info_json())
    return info
