# SPDX-License-Identifier: GPL-2.0-or-later
"""checkfreq-torch.py: checkfreq-exact.py with the torch model.

The same kills and comparisons as checkfreq-exact.py, on a small CNN with
batch norm (buffers that forward passes change), dropout (torch's random
generator), SGD with momentum (optimizer state copied in the background
while the next iteration runs) and a step LR schedule. Skipped when torch
is not installed for this Python (tools/install-deps --with-torch).
"""

import os
import runpy

os.environ["CKPTJOB_TORCH"] = "1"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "checkfreq-exact.py"), run_name="__main__")
