"""Each kernel's status in the Graph pane, derived from what the other panes know about it.

Facts per kernel: does the analysis give it a kernel, is its code edited, did a compile check (Ctrl+B, or the
validation run's compile step) pass or fail, did the validation run pass or fail it, does the live purity check
find a diagnostic inside its section of the composed file. A compile or validation verdict belongs to the code it
was given: it holds while the kernel's code is still that code, so editing a kernel after a PASS makes it "edited"
again (and undoing the edit back to the validated code restores the PASS, since it is the same code).

The status shown is the most important fact, in the one order below.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject

# Most important first: a purity problem must be fixed whatever else holds, a failure outranks a pass, a verdict
# outranks the mere state of the code.
PRECEDENCE: tuple[str, ...] = ("impure", "fail", "pass", "compiled", "edited", "generated", "none")


@dataclass
class KernelFacts:
    has_kernel: bool = True  # False: the analysis found no kernel for this spec ("no kernel")
    edited: bool = False
    impure: bool = False
    compiled: tuple[str, bool] | None = None  # (the code checked, it compiled)
    validated: tuple[str, bool] | None = None  # (the code validated, it passed)


def resolve_status(facts: KernelFacts, code: str | None) -> str:
    """The status to show for a kernel whose current code is `code` (None: not known, verdicts are kept)."""
    present = set()
    if facts.impure:
        present.add("impure")
    for verdict, good, bad in ((facts.validated, "pass", "fail"), (facts.compiled, "compiled", "fail")):
        if verdict is not None and (code is None or verdict[0] == code):
            present.add(good if verdict[1] else bad)
    present.add("edited" if facts.edited else ("generated" if facts.has_kernel else "none"))
    return next(s for s in PRECEDENCE if s in present)


class KernelStatusTracker(QObject):
    """Collects the facts from the workspace, the editors and the validation pane; pushes statuses to the graph."""

    def __init__(self, graph, workspace, editors, validation, session, parent: QObject | None = None):
        super().__init__(parent)
        self.graph, self.workspace, self.editors, self.validation = graph, workspace, editors, validation
        self.facts: dict[str, KernelFacts] = {}
        self._validated_codes: dict[str, str] = {}  # the code of each kernel when the validation run started
        session.analysisFinished.connect(lambda analysis: self._on_analysis(analysis.decomposition))
        graph.layoutReady.connect(self.refresh)  # a new layout starts from the spec's statuses
        workspace.cleared.connect(self._on_cleared)
        workspace.sourcesReady.connect(self.refresh)
        workspace.kernelEdited.connect(self.refresh_kernel)
        workspace.editsReplaced.connect(self.refresh)
        workspace.composeFinished.connect(self._on_composed)
        editors.compileVerdict.connect(self._on_compile_verdict)
        validation.runningChanged.connect(self._on_validation_running)
        validation.kernelStatus.connect(self._on_validation_status)

    # ---- facts ---------------------------------------------------------------------------------------------
    def _fact(self, kernel_id: str) -> KernelFacts:
        return self.facts.setdefault(kernel_id, KernelFacts())

    def _on_analysis(self, dec) -> None:
        for k in dec.kernels:
            self._fact(k.id).has_kernel = not k.unsupported
        self.refresh()

    def _on_cleared(self) -> None:
        self.facts.clear()
        self._validated_codes.clear()

    def _on_composed(self, result) -> None:
        if result.composed is None:
            return
        impure = {kid for d in result.diagnostics if (kid := result.kernel_at(d.line))}
        for kid in set(self.facts) | impure:
            self._fact(kid).impure = kid in impure
        self.refresh()

    def _on_compile_verdict(self, kernel_id: str, code: str, ok: bool) -> None:
        self._fact(kernel_id).compiled = (code, ok)
        self.refresh_kernel(kernel_id)

    def _on_validation_running(self, running: bool) -> None:
        if not running:
            return
        # a new run: its verdicts replace the last run's, and they are about the code as it is now
        self._validated_codes = {kid: self.workspace.code(kid) for kid in self.workspace.kernel_ids()}
        for facts in self.facts.values():
            facts.validated = None
        self.refresh()

    def _on_validation_status(self, kernel_id: str, status: str) -> None:
        code = self._validated_codes.get(kernel_id, self.workspace.code(kernel_id))
        facts = self._fact(kernel_id)
        if status == "compiled":
            facts.compiled = (code, True)
        elif status in ("pass", "fail"):
            facts.validated = (code, status == "pass")
        self.refresh_kernel(kernel_id)

    # ---- statuses ------------------------------------------------------------------------------------------
    def status(self, kernel_id: str) -> str:
        facts = self._fact(kernel_id)
        facts.edited = self.workspace.is_edited(kernel_id)
        code = self.workspace.code(kernel_id) if self.workspace.ready else None
        return resolve_status(facts, code or None)

    def refresh_kernel(self, kernel_id: str) -> None:
        self.graph.set_status(kernel_id, self.status(kernel_id))

    def refresh(self) -> None:
        for kid in self.facts:
            self.refresh_kernel(kid)
