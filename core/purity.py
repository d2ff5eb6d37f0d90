"""Static purity check of a composed file: no PyTorch compute may remain in the forward path.

The forward path is `ModelCuTile*.forward` and `composed_function*` plus every function or method of the file they
call, transitively (launch wrappers included); `@ct.kernel` bodies are cuTile and not checked for torch. Permitted
there: allocation, rearrangement (view/reshape/permute/contiguous/transpose/flatten/unsqueeze/expand/slicing),
cat/stack, and scalar arithmetic between launches. File-level rules: allowed imports only, the original block
byte-identical to the model file, no citations of reference sources, exactly one `__main__` block, and every
unsupported-op skeleton reported.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass

from pydantic import BaseModel

from .catalog import base_op, catalog_ops
from .composer import ALLOWED_IMPORTS, HEADER_RE, ORIGINAL_END, ORIGINAL_START, extract_original

RULES = {
    "PUR001": "call of an nn.Module in the forward path",
    "PUR002": "torch.nn.functional call in the forward path",
    "PUR003": "torch compute function in the forward path",
    "PUR004": "tensor compute method in the forward path",
    "PUR005": "arithmetic operator on tensors in the forward path",
    "PUR006": "ATen compute op in the forward path",
    "PUR007": "unsupported op: kernel is a skeleton that raises at launch",
    "PUR010": "import outside the allowed list",
    "PUR011": "the original user code block differs from the model file",
    "PUR012": "citation of a reference source",
    "PUR013": "there must be exactly one `if __name__ == \"__main__\":` block",
    "PUR014": "syntax error",
}

ALLOC = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
         "arange", "tensor", "as_tensor", "eye", "linspace", "logspace"}
# tensor methods that return plain Python values (metadata, scalars): arithmetic on them is host glue
METADATA = {"size", "dim", "numel", "stride", "storage_offset", "item", "tolist", "element_size"}
REARRANGE = METADATA | {"reshape", "view", "permute", "contiguous", "transpose", "flatten", "unflatten", "unsqueeze",
                        "squeeze", "expand", "expand_as", "narrow", "select", "t", "movedim", "swapaxes", "view_as",
                        "reshape_as", "chunk", "split", "unbind", "clone", "detach", "to", "cuda", "cpu", "float",
                        "half", "bfloat16", "type", "is_contiguous", "data_ptr", "new_empty", "new_zeros", "new_ones",
                        "new_full", "masked_fill_not", "get_device"}
CONCAT = {"cat", "stack", "concat", "concatenate", "hstack", "vstack"}
TORCH_OK = ALLOC | CONCAT | {"reshape", "permute", "transpose", "flatten", "unsqueeze", "squeeze", "narrow", "select",
                            "chunk", "split", "unbind", "movedim", "swapaxes", "device", "Size", "no_grad",
                            "inference_mode", "get_default_device", "is_tensor", "broadcast_shapes", "dtype",
                            "float32", "float16", "bfloat16", "int64", "int32", "bool", "cuda"}
GLUE_CATEGORIES = {"data_movement", "allocation", "identity"}
_COMPUTE_METHODS = {name for name, info in catalog_ops().items() if info.category not in GLUE_CATEGORIES} | {
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "exp", "log", "sum", "mean", "max", "min", "relu", "sigmoid",
    "tanh", "softmax", "pow", "sqrt", "abs", "neg", "clamp", "masked_fill", "where", "cumsum", "norm", "var", "std",
    "addmm", "baddbmm", "add_", "mul_", "sub_", "div_", "relu_", "clamp_", "copy_", "fill_", "zero_", "exp_"}
_COMPUTE_METHODS -= REARRANGE
CITATION = re.compile(r"tilegym|cutile-python|github\.com/nvidia", re.IGNORECASE)


class PurityDiagnostic(BaseModel):
    rule: str
    severity: str  # "error" | "warning"
    line: int
    column: int  # 1-based
    end_column: int
    message: str
    hint: str = ""
    function: str = ""

    def format(self, path: str) -> str:
        return f"{path}:{self.line}:{self.column}: {self.rule} {self.message}"


@dataclass
class _Ctx:
    functions: dict[str, ast.FunctionDef]
    methods: dict[tuple[str, str], ast.FunctionDef]
    kernels: set[str]


def check_text(text: str, model_source: str | None = None) -> list[PurityDiagnostic]:
    """All diagnostics for a composed file's text, sorted by position."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [PurityDiagnostic(rule="PUR014", severity="error", line=exc.lineno or 1, column=exc.offset or 1,
                                 end_column=(exc.offset or 1) + 1, message=f"syntax error: {exc.msg}",
                                 hint="fix the syntax; nothing else can be checked until the file parses")]
    original_span = _original_span(text)
    diags: list[PurityDiagnostic] = []
    diags += _file_rules(text, tree, original_span, model_source)
    diags += _forward_rules(tree, original_span)
    unique = {(d.line, d.column, d.rule, d.message): d for d in diags}
    return sorted(unique.values(), key=lambda d: (d.line, d.column, d.rule))


def _original_span(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    start = end = 0
    for i, line in enumerate(lines, 1):
        if line == ORIGINAL_START and not start:
            start = i
        elif line == ORIGINAL_END and start and not end:
            end = i
    return start, end


def _in_original(line: int, span: tuple[int, int]) -> bool:
    return span[0] <= line <= span[1] and span[0] > 0


def _diag(rule: str, node: ast.AST, message: str, hint: str, severity: str = "error",
          function: str = "") -> PurityDiagnostic:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0) + 1
    end = getattr(node, "end_col_offset", col) + 1 if getattr(node, "end_lineno", line) == line else col + 1
    return PurityDiagnostic(rule=rule, severity=severity, line=line, column=col, end_column=max(end, col + 1),
                            message=message, hint=hint, function=function)


def _file_rules(text: str, tree: ast.Module, span: tuple[int, int], model_source: str | None):
    diags = []
    allowed = {line.strip() for line in ALLOWED_IMPORTS}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not _in_original(node.lineno, span):
            segment = ast.get_source_segment(text, node) or ""
            if segment.strip() not in allowed:
                diags.append(_diag("PUR010", node, f"import not allowed: `{segment.strip()}`",
                                   "the composed file may import only: " + "; ".join(ALLOWED_IMPORTS)))
    for i, line in enumerate(text.split("\n"), 1):
        m = CITATION.search(line)
        if m and not _in_original(i, span):
            diags.append(PurityDiagnostic(rule="PUR012", severity="error", line=i, column=m.start() + 1,
                                          end_column=m.end() + 1, message=f"citation of a reference source: "
                                          f"`{m.group(0)}`", hint="remove the citation; write provenance as spec ids"))
    mains = [n for n in tree.body if isinstance(n, ast.If) and _is_main_test(n.test)]
    if len(mains) != 1:
        node = mains[1] if len(mains) > 1 else tree
        diags.append(_diag("PUR013", node, f"found {len(mains)} `__main__` blocks, expected exactly one",
                           "keep one validation block at the end of the file"))
    block = extract_original(text)
    header = HEADER_RE.search(text)
    if block is None:
        diags.append(PurityDiagnostic(rule="PUR011", severity="error", line=1, column=1, end_column=2,
                                      message="the original code markers are missing",
                                      hint=f"the user's file must sit between `{ORIGINAL_START}` and the end marker"))
    else:
        expected_sha = header["sha"] if header else None
        if model_source is not None:
            same = block == model_source or (not model_source.endswith("\n") and block == model_source + "\n")
        elif expected_sha:
            digest = hashlib.sha256(block.encode("utf-8")).hexdigest()
            digest2 = hashlib.sha256(block[:-1].encode("utf-8")).hexdigest()
            same = expected_sha in (digest, digest2)
        else:
            same = True
        if not same:
            diags.append(PurityDiagnostic(rule="PUR011", severity="error", line=span[0] or 1, column=1,
                                          end_column=2, message="the original user code block was modified",
                                          hint="restore it byte-for-byte from the model file"))
    return diags


def _is_main_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr in ("kernel", "function") and \
                isinstance(target.value, ast.Name) and target.value.id == "ct":
            return True
    return False


def _collect(tree: ast.Module, span) -> _Ctx:
    functions, methods, kernels = {}, {}, set()
    for node in tree.body:
        if _in_original(node.lineno, span):
            continue
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
            if _is_kernel(node):
                kernels.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    methods[(node.name, item.name)] = item
    return _Ctx(functions, methods, kernels)


def _forward_rules(tree: ast.Module, span) -> list[PurityDiagnostic]:
    ctx = _collect(tree, span)
    roots: list[tuple[str | None, ast.FunctionDef]] = []
    for (cls, name), fn in ctx.methods.items():
        if cls.startswith("ModelCuTile") and name == "forward":
            roots.append((cls, fn))
    for name, fn in ctx.functions.items():
        if name.startswith("composed_function"):
            roots.append((None, fn))
    diags: list[PurityDiagnostic] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        cls, fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if fn.name in ctx.kernels:
            continue
        checker = _FunctionChecker(fn, cls, ctx)
        checker.run()
        diags += checker.diags
        for callee in checker.callees:
            stack.append(callee)
    return diags


class _FunctionChecker(ast.NodeVisitor):
    def __init__(self, fn: ast.FunctionDef, cls: str | None, ctx: _Ctx):
        self.fn, self.cls, self.ctx = fn, cls, ctx
        self.diags: list[PurityDiagnostic] = []
        self.callees: list[tuple[str | None, ast.FunctionDef]] = []
        self.tensors: set[str] = {a.arg for a in fn.args.args if a.arg != "self"}
        self.model_names: set[str] = {"model"} if cls is None else set()

    def run(self) -> None:
        self._check_skeleton()
        for stmt in self.fn.body:
            self.visit(stmt)

    def _check_skeleton(self) -> None:
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and \
                    isinstance(node.exc.func, ast.Name) and node.exc.func.id == "NotImplementedError":
                msg = node.exc.args[0].value if node.exc.args and isinstance(node.exc.args[0], ast.Constant) else ""
                self.diags.append(_diag("PUR007", node, f"{self.fn.name}: {msg or 'skeleton raises at launch'}",
                                        "write the cuTile kernel for this op and remove the raise", function=self.fn.name))

    def err(self, rule: str, node: ast.AST, message: str, hint: str, severity: str = "error") -> None:
        self.diags.append(_diag(rule, node, message, hint, severity, self.fn.name))

    # --- bookkeeping of which names hold tensors / the model
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        value = node.value
        is_model = (isinstance(value, ast.Attribute) and value.attr == "model" and
                    isinstance(value.value, ast.Name) and value.value.id == "self") or \
                   (isinstance(value, ast.Name) and value.id in self.model_names)
        for target in node.targets:
            for name in _target_names(target):
                if is_model:
                    self.model_names.add(name)
                elif self._tensorish(value):
                    self.tensors.add(name)

    def _tensorish(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and (func.id.startswith("launch_") or func.id in self.ctx.functions):
                return True
            if isinstance(func, ast.Attribute):
                return True
        if isinstance(value, (ast.Subscript, ast.Attribute, ast.BinOp)):
            return True
        if isinstance(value, ast.Name):
            return value.id in self.tensors
        return False

    def _root(self, node: ast.expr) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node.id if isinstance(node, ast.Name) else None

    def _is_tensor_expr(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Subscript):
            return self._is_tensor_expr(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in ("shape", "dtype", "device", "ndim", "T") and node.attr != "T":
                return False
            return self._root(node) in self.model_names or self._is_tensor_expr(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in METADATA:
                return False
            return self._is_tensor_expr(node.func.value)
        if isinstance(node, ast.BinOp):
            return self._is_tensor_expr(node.left) or self._is_tensor_expr(node.right)
        return False

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if self._is_tensor_expr(node.left) or self._is_tensor_expr(node.right):
            op = type(node.op).__name__
            self.err("PUR005", node, f"arithmetic ({op}) on tensors runs in PyTorch",
                     "fuse it into a kernel (an epilogue of the kernel that produces the operand)")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self._is_tensor_expr(node.target) or self._is_tensor_expr(node.value):
            self.err("PUR005", node, f"in-place arithmetic ({type(node.op).__name__}) on tensors runs in PyTorch",
                     "fuse it into a kernel")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        dotted = _dotted(func)
        if isinstance(func, ast.Name):
            if func.id in self.ctx.functions:
                self.callees.append((None, self.ctx.functions[func.id]))
            elif self.cls and (self.cls, func.id) in self.ctx.methods:
                self.callees.append((self.cls, self.ctx.methods[(self.cls, func.id)]))
            elif func.id in ("F",):
                pass
        elif dotted:
            parts = dotted.split(".")
            if parts[0] in ("F",) or dotted.startswith("torch.nn.functional."):
                self.err("PUR002", node, f"`{dotted}(...)` runs in PyTorch",
                         f"implement {parts[-1]} in a cuTile kernel (or fuse it into the neighbouring one)")
            elif parts[0] == "torch" and len(parts) >= 2 and parts[1] == "ops":
                self._check_aten(node, parts)
            elif parts[0] == "aten":
                self._check_aten(node, ["torch", "ops"] + parts)
            elif parts[0] == "torch" and len(parts) == 2 and parts[1] not in TORCH_OK:
                self.err("PUR003", node, f"`{dotted}(...)` is PyTorch compute",
                         f"move {parts[1]} into a cuTile kernel")
            elif parts[0] == "torch" and parts[1] in ("nn", "linalg", "fft", "special") and len(parts) > 2:
                self.err("PUR003", node, f"`{dotted}(...)` is PyTorch compute", "move it into a cuTile kernel")
            elif parts[0] == "self" and len(parts) == 2 and self.cls and (self.cls, parts[1]) in self.ctx.methods:
                self.callees.append((self.cls, self.ctx.methods[(self.cls, parts[1])]))
            elif parts[0] in self.model_names or (parts[0] == "self" and len(parts) > 2 and parts[1] == "model"):
                self.err("PUR001", node, f"`{dotted}(...)` calls an nn.Module of the original model",
                         "pass its weights (e.g. m.conv.weight) to a launch_<kernel>() instead of calling it")
            elif isinstance(func, ast.Attribute) and func.attr in _COMPUTE_METHODS and \
                    self._is_tensor_expr(func.value):
                self.err("PUR004", node, f"tensor method `.{func.attr}()` is PyTorch compute",
                         f"compute {func.attr} in a cuTile kernel")
        elif isinstance(func, ast.Attribute) and func.attr in _COMPUTE_METHODS and self._is_tensor_expr(func.value):
            self.err("PUR004", node, f"tensor method `.{func.attr}()` is PyTorch compute",
                     f"compute {func.attr} in a cuTile kernel")
        self.generic_visit(node)

    def _check_aten(self, node: ast.Call, parts: list[str]) -> None:
        if len(parts) < 4 or parts[2] != "aten":
            return
        op = base_op(parts[3])
        info = catalog_ops().get(op)
        if info is None or info.category not in GLUE_CATEGORIES:
            self.err("PUR006", node, f"`aten.{parts[3]}` is an ATen compute op", f"implement {op} in a cuTile kernel")


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _target_names(t)]
    return []


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def check_file(path: str, model_source: str | None = None) -> list[PurityDiagnostic]:
    with open(path, encoding="utf-8") as f:
        return check_text(f.read(), model_source)
