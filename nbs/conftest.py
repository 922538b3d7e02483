"""Let nbval compare notebooks cleaned by nbdev_clean, with the backend the stored outputs were made with.

nbdev_clean removes execution counts (so diffs stay quiet), and nbval 0.11 treats a reference cell with
outputs but no execution count as "unrun" and fails it. Before nbval compares, give such cells a count:
their stored outputs are still compared exactly against a fresh run.

The stored figure outputs come from Jupyter's inline backend (an image plus a `<Figure size ...>` text, which
nbval compares). A non-interactive MPLBACKEND such as Agg in the caller's environment would make `plt.show()`
print nothing, so the kernels nbval starts get the inline backend explicitly. irinnov's progress bars, which show
in Jupyter, are switched off in those kernels (IRINNOV_PROGRESS=0).

A cell marked `#| cpu_dependent` prints results of models trained with floating-point kernels that differ from one
processor to another (implicit's ALS and BPR in the MovieLens notebook: the same seed gives scores that differ in the
last bits, and means that differ in the fourth decimal). Such a cell is run, and fails the test if it raises, but
its outputs are not compared with the stored ones, which were made on the machine that last executed the notebook.
"""
import os

import nbval.plugin as _nbval

os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
# progress bars show in Jupyter, but never in the outputs nbval compares
os.environ["IRINNOV_PROGRESS"] = "0"

_collect = _nbval.IPyNbFile.collect


def _collect_with_counts(self):
    for item in _collect(self):
        cell = getattr(item, "cell", None)
        if cell is not None and cell.get("cell_type") == "code" and cell.get("outputs") and cell.get("execution_count") is None:
            cell["execution_count"] = 1
        if cell is not None and "#| cpu_dependent" in cell.get("source", "").splitlines() and getattr(item, "options", None):
            item.options["check"] = False
        yield item


_nbval.IPyNbFile.collect = _collect_with_counts
