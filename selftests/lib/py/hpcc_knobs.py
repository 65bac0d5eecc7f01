# SPDX-License-Identifier: GPL-2.0
"""The module's parameters and defaults for the Python helpers: read from
../knob_defaults (selftests/lib/), which a host test keeps equal to the core's
knob table (rust/hpcc_core/knobs.rs, `hpcc-replay --knobs`)."""
import os

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "knob_defaults")


def knob_default(name):
    """A numeric parameter's default."""
    with open(_PATH) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k == name and not k.startswith("#"):
                return int(v)
    raise KeyError(name)
