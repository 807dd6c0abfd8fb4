#!/usr/bin/env python3
"""Doc test: compiles every ```cpp block of a Markdown file, and every \\code block of a header's
/// comments, and runs it.

    tests/doc_snippets.py README.md docs/*.md          # from the repository root
    tests/doc_snippets.py include/tower/*.hpp include/tower/*/*.hpp dsl/*.hpp
    bazel test //docs:all                               # one test per Markdown file, and
                                                        # header_examples_test (docs/BUILD)

The conventions (docs/README.md of the user guide repeats them):
  * A block with `int main()` is a program. Its #include lines go to the top of the generated
    file; the rest goes into a namespace of its own, its main (the block's last function) is
    called, and a non-zero return fails the test.
  * Any other block is a fragment: the body of a function that is called (an exception fails the
    test). Declarations a function body cannot hold (templates, structs with member templates)
    belong in a program.
  * Every block sees `#include <tower/tower.hpp>`, <cstdio>, <functional>, <iostream> and
    `namespace tw = tower;`.
  * All blocks of a file share one translation unit (one compile per file), except a block with a
    `#define` line, which gets its own.
  * In a header (.hpp), an example is a Doxygen block in `///` comments, from `/// \\code` to
    `/// \\endcode` (the `/// ` prefix is stripped); it follows the conventions above. The blocks
    of all the headers on the command line share one translation unit.
  * Marker comments, anywhere in a block:
      // doc: no-compile                  not compiled (pseudo-code, shell-like text);
      // doc: compile-only                compiled, not run;
      // doc: compile-fail: MESSAGE       must fail to compile with g++, and the first error line
                                          must contain MESSAGE.
A block that includes <tower/parallel.hpp> links oneTBB.

Flags: g++ -std=c++20 -O0 -Wall -Wextra -Werror -Wno-unused (a fragment's example variables may
be unused), tower's include paths and Eigen's ($CXX instead of g++ if set); errors point at the
Markdown file's or the header's lines.
"""
import os
import re
import subprocess
import sys
import tempfile

PRELUDE = """#include <tower/tower.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
namespace tw = tower;
"""
FENCE = re.compile(r"^(\s*)```\s*(\S*)\s*$")
MAIN = re.compile(r"\bint\s+main\s*\(\s*(int\s+argc\s*,\s*char\s*\*\*\s*argv)?\s*\)")


class Block:
    def __init__(self, path, line, lines):
        self.path, self.line, self.lines = path, line, lines  # line: the first code line (1-based)
        text = "\n".join(lines)
        self.no_compile = "// doc: no-compile" in text
        self.compile_only = "// doc: compile-only" in text
        m = re.search(r"// doc: compile-fail: (.*)$", text, re.M)
        self.expect_error = m.group(1).strip() if m else None
        self.program = bool(MAIN.search(text))
        self.own_tu = any(l.lstrip().startswith("#define") for l in lines) or self.expect_error is not None
        self.parallel = "tower/parallel.hpp" in text
        # MPI programs start under mpirun: such a block is compiled (with Open MPI's flags), not run.
        self.mpi = "tower/mpi.hpp" in text
        self.compile_only = self.compile_only or self.mpi
        self.own_tu = self.own_tu or self.mpi

    @property
    def where(self):
        return f"{self.path}:{self.line}"


CODE = re.compile(r"^\s*///\s?[\\@]code(\{[^}]*\})?\s*$")
ENDCODE = re.compile(r"^\s*///\s?[\\@]endcode\s*$")
COMMENT = re.compile(r"^\s*/// ?")


def header_blocks_of(path):
    """The /// \\code ... /// \\endcode blocks of a header, with the line of their first code line."""
    out, lines = [], open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if not CODE.match(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and COMMENT.match(lines[j]) and not ENDCODE.match(lines[j]):
            j += 1
        if j == len(lines) or not ENDCODE.match(lines[j]):
            raise SystemExit(f"{path}:{i + 1}: \\code without a \\endcode in the same /// comment")
        out.append(Block(path, i + 2, [COMMENT.sub("", l, count=1) for l in lines[i + 1:j]]))
        i = j + 1
    return out


def blocks_of(path):
    """The ```cpp / ```c++ blocks of a Markdown file, with the line of their first code line."""
    if path.endswith(".hpp"):
        return header_blocks_of(path)
    out, lines = [], open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = len(m.group(1)), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not (FENCE.match(lines[j]) and not FENCE.match(lines[j]).group(2)):
            j += 1
        if lang in ("cpp", "c++"):
            out.append(Block(path, i + 2, [l[indent:] if l[:indent].isspace() else l for l in lines[i + 1:j]]))
        i = j + 1
    return out


def render(blocks):
    """One translation unit for `blocks`: hoisted includes, each block in its namespace, a main."""
    includes, bodies, calls = [], [], []
    for k, b in enumerate(blocks):
        body = []
        for l in b.lines:
            if l.lstrip().startswith("#include"):
                if l.strip() not in includes:
                    includes.append(l.strip())
                body.append("")  # keeps the line numbers
            else:
                body.append(l)
        ns = f"doc_block_{k}"
        text = "\n".join(body)
        if b.program:
            text = MAIN.sub(lambda m: "int main_(int argc = 0, char** argv = nullptr)" if m.group(1) else "int main_()", text)
            # main's implicit return 0: main is the block's last function, so its brace is the
            # last one (the added return is unreachable after an explicit one).
            end = text.rfind("}")
            text = text[:end] + "return 0; " + text[end:]
            bodies.append(f'namespace {ns} {{\n#line {b.line} "{b.path}"\n{text}\n}}')
        else:
            bodies.append(f'namespace {ns} {{\nvoid main_() {{\n#line {b.line} "{b.path}"\n{text}\n}}\n}}')
        calls.append((ns, b))
    # A block's own #defines must precede tower's headers.
    defines = [l for b in blocks for l in b.lines if l.lstrip().startswith("#define")]
    src = "\n".join(defines) + "\n" + "\n".join(includes) + "\n" + PRELUDE
    src += "\n".join(bodies) + "\n\n"
    src += "int main() {\n  int failed = 0;\n"
    for ns, b in calls:
        if b.compile_only:
            continue
        ret = "return " if b.program else ""
        run = f"[]() -> int {{ {ret}{ns}::main_(); {'' if b.program else 'return 0; '}}}"
        src += (f'  std::printf("== {b.where}\\n"); std::fflush(stdout);\n'
                f"  try {{ if (int r = {run}(); r != 0) {{ std::printf(\"FAILED {b.where}: main returned %d\\n\", r); ++failed; }} }}\n"
                f'  catch (const std::exception& e) {{ std::printf("FAILED {b.where}: exception: %s\\n", e.what()); ++failed; }}\n')
    src += "  return failed == 0 ? 0 : 1;\n}\n"
    return src


def mpi_flags(which):
    """Open MPI's compile or link flags (`mpicxx --showme:compile|link`)."""
    return subprocess.run(["mpicxx", f"--showme:{which}"], capture_output=True, text=True, check=True).stdout.split()


def compiler_line(root, src, exe, parallel, syntax_only=False, mpi=False):
    cmd = [os.environ.get("CXX", "g++"), "-std=c++20", "-O0", "-Wall", "-Wextra", "-Werror", "-Wno-unused",
           f"-I{root}/include", f"-I{root}", "-isystem", "/usr/include/eigen3", src]
    cmd += mpi_flags("compile") if mpi else []
    if syntax_only:
        return cmd + ["-fsyntax-only"]
    return cmd + ["-o", exe, "-lmvec", "-pthread"] + (["-ltbb"] if parallel else []) + (mpi_flags("link") if mpi else [])


def check_blocks(root, blocks, md_name, tmp):
    """Compiles and runs `blocks` (their path: relative to root), one translation unit for all but
    those that need their own; md_name names the generated files. Returns the number of failures."""
    failures = 0
    groups = [[b for b in blocks if not b.own_tu]] + [[b] for b in blocks if b.own_tu]
    for g, group in enumerate(x for x in groups if x):
        stem = os.path.join(tmp, re.sub(r"\W", "_", md_name) + f"_{g}")
        with open(stem + ".cpp", "w") as f:
            f.write(render(group))
        fail_block = group[0] if group[0].expect_error is not None else None
        r = subprocess.run(compiler_line(root, stem + ".cpp", stem, any(b.parallel for b in group), fail_block is not None,
                                           any(b.mpi for b in group)),
                           capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        where = ", ".join(b.where for b in group)
        if fail_block is not None:
            first = next((l for l in r.stderr.split("\n") if re.search(r"(^|: )(fatal )?error:", l)), "")
            if r.returncode == 0:
                print(f"FAILED {where}: compiled, but it must be rejected with: {fail_block.expect_error}")
                failures += 1
            elif fail_block.expect_error not in first:
                print(f"FAILED {where}: the first error line does not contain: {fail_block.expect_error}\n  it is: {first}")
                failures += 1
            else:
                print(f"PASSED {where}: rejected: {first.strip()[:300]}")
            continue
        if r.returncode != 0:
            print(f"FAILED to compile {where}:\n" + "\n".join(r.stderr.split("\n")[:60]))
            failures += 1
            continue
        run = subprocess.run([stem], capture_output=True, text=True)
        print(run.stdout + run.stderr, end="")
        if run.returncode != 0:  # one failure per block that failed (or one for a crash)
            failures += max(1, run.stdout.count("\nFAILED ") + run.stdout.startswith("FAILED "))
        else:
            print(f"PASSED {where}")
    return failures


def named_blocks(root, path):
    """The blocks of one file to compile, each with the file's path relative to root."""
    name = os.path.relpath(path, root) if path.startswith(root) else path
    blocks = [b for b in blocks_of(path) if not b.no_compile]
    for b in blocks:
        b.path = name
    return name, blocks


def check_file(root, md, tmp):
    """Compiles and runs the blocks of one Markdown file; returns the number of failures."""
    md_name, blocks = named_blocks(root, md)
    if not blocks:
        print(f"{md_name}: no C++ blocks")
        return 0
    return check_blocks(root, blocks, md_name, tmp)


def check_headers(root, headers, tmp):
    """Compiles and runs the examples of all `headers` together; returns the number of failures."""
    blocks, with_examples = [], 0
    for h in headers:
        name, bs = named_blocks(root, h)
        if bs:
            print(f"{name}: {len(bs)} example{'' if len(bs) == 1 else 's'}")
            with_examples += 1
        blocks += bs
    print(f"headers: {len(blocks)} examples in {with_examples} of {len(headers)} files")
    return check_blocks(root, blocks, "headers", tmp) if blocks else 0


def main(argv):
    # Under `bazel test` the runfiles root holds include/, dsl/ and the Markdown files.
    root = os.path.join(os.environ["TEST_SRCDIR"], os.environ.get("TEST_WORKSPACE", "tower")) \
        if "TEST_SRCDIR" in os.environ else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = [a if os.path.isabs(a) or os.path.exists(a) else os.path.join(root, a) for a in argv[1:]]
    if not files:
        print(__doc__)
        return 2
    failures = 0
    files = [os.path.abspath(f) for f in files]
    with tempfile.TemporaryDirectory() as tmp:
        for md in files:
            if not md.endswith(".hpp"):
                failures += check_file(root, md, tmp)
        headers = [h for h in files if h.endswith(".hpp")]
        if headers:
            failures += check_headers(root, headers, tmp)
    print(f"doc_snippets: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
