"""Measure the shape of the source tree: the figures the thin-edges issue asks for.

Run ``python benchmarks/house.py`` from the project root; it reads ``src/neardup`` as text and
AST only (nothing is imported or run) and prints one line per figure.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

ALIAS = re.compile(r"^(\w+Array)\s*(?::\s*\w+)?\s*=\s*(?:npt\.)?NDArray", re.M)
FORMAT_COMPARE = re.compile(
    r"""(?:==|!=|\bin\b)\s*[\(\{\[]?\s*["'](?:jsonl|parquet|text|warc|html|csv|tsv|jsonl\.gz)["']"""
)


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under the package root."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module an ImportFrom names."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, names: set[str]) -> tuple[set[str], int, set[str]]:
    """Top-level imports of our own modules, the count of function-local ones, and every
    module imported anywhere (function-local and TYPE_CHECKING ones included)."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    anywhere: set[str] = set()
    local = 0
    is_package = path.name == "__init__.py"

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name.split(".")[0] == "neardup"]
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, is_package)
            if target.split(".")[0] != "neardup":
                return []
            found = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append(sub if sub in names else target)
            return found
        return []

    def walk(node: ast.AST, in_function: bool, in_type_check: bool) -> None:
        nonlocal local
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found = targets(child)
                if not in_type_check:
                    anywhere.update(found)
                if in_function:
                    local += len(found) > 0
                elif not in_type_check:
                    top.update(found)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, True, in_type_check)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                walk(child, in_function, True)
            else:
                walk(child, in_function, in_type_check)

    walk(tree, False, False)
    return top, local, anywhere


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _long_functions(path: Path, limit: int) -> list[tuple[str, int]]:
    """Functions longer than ``limit`` lines (decorated Numba kernels excluded)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
            if "njit" in decorators or "jit" in decorators.split("(")[0]:
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                out.append((node.name, length))
    return out


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="src/neardup")
    parser.add_argument("--limit", type=int, default=60, help="long-function threshold in lines")
    parser.add_argument("-v", "--verbose", action="store_true", help="list what each figure counts")
    args = parser.parse_args()
    root = Path(args.root)
    modules = _modules(root)
    names = set(modules)
    graph: dict[str, set[str]] = {}
    everywhere: dict[str, set[str]] = {}
    local_imports = 0
    local_by: dict[str, int] = {}
    for name, path in modules.items():
        top, local, anywhere = _imports(name, path, names)
        graph[name] = {t for t in top if t in names and t != name}
        everywhere[name] = {t for t in anywhere if t in names and t != name}
        local_imports += local
        if local:
            local_by[name] = local
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules.items()}
    largest = max(sizes, key=lambda n: sizes[n])
    long_functions = [
        (name, fn, n)
        for name, path in modules.items()
        if "_kernels" not in name
        for fn, n in _long_functions(path, args.limit)
    ]
    aliases: dict[str, list[str]] = {}
    for name, path in modules.items():
        for alias in ALIAS.findall(path.read_text()):
            aliases.setdefault(alias, []).append(name)
    repeated = sum(len(v) - 1 for v in aliases.values() if len(v) > 1)
    format_compares = [
        (name, line.strip())
        for name, path in modules.items()
        if name.startswith("neardup.io")
        for line in path.read_text().splitlines()
        if FORMAT_COMPARE.search(line)
    ]
    type_is = [
        (name, line.strip())
        for name in ("neardup.engine", "neardup.run")
        if name in modules
        for line in modules[name].read_text().splitlines()
        if re.search(r"\btype\([^)]*\)\s+is\b", line)
    ]
    cycles = _cycles(graph)
    hidden = _cycles(everywhere)  # cycles that function-local imports only hide
    cli = sizes.get("neardup.cli", 0)
    print(f"cli.py lines                      {cli}")
    print(f"largest module                    {sizes[largest]} ({largest})")
    print(f"functions over {args.limit} lines (no kernels) {len(long_functions)}")
    print(f"function-local imports of ours    {local_imports}")
    print(f"repeated array aliases            {repeated}")
    print(f"format-name comparisons in io/    {len(format_compares)}")
    print(f"type(...) is in engine/run        {len(type_is)}")
    print(f"import cycles                     {len(cycles)}")
    print(
        f"  counting function-local imports {len(hidden)} ({sum(len(c) for c in hidden)} modules)"
    )
    if args.verbose:
        print(
            "\nmodules over 600 lines:",
            *(f"  {n} {s}" for n, s in sorted(sizes.items(), key=lambda x: -x[1]) if s > 600),
            sep="\n",
        )
        print(
            "\nlong functions:",
            *(f"  {m}.{f} {n}" for m, f, n in sorted(long_functions, key=lambda x: -x[2])),
            sep="\n",
        )
        print(
            "\nlocal imports by module:",
            *(f"  {m} {n}" for m, n in sorted(local_by.items(), key=lambda x: -x[1])),
            sep="\n",
        )
        print(
            "\nrepeated aliases:",
            *(f"  {a}: {', '.join(v)}" for a, v in aliases.items() if len(v) > 1),
            sep="\n",
        )
        print(
            "\nformat-name comparisons:",
            *(f"  {m}: {line}" for m, line in format_compares),
            sep="\n",
        )
        print("\ncycles:", *(f"  {' <-> '.join(c)}" for c in cycles), sep="\n")
        print(
            "\ncycles through function-local imports:",
            *(f"  {' <-> '.join(c)}" for c in hidden),
            sep="\n",
        )


if __name__ == "__main__":
    main()
