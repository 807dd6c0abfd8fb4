"""optional_local_repository: a folder of the machine (system headers) as a repository, or an
empty repository when the folder is absent, so a BUILD file that globs it sees no files.

new_local_repository fails when its path does not exist; the benchmarks' peers (Sacado, Open MPI,
ADOL-C, Ceres) are optional Debian packages (scripts/bootstrap-bench), and the benchmarks leave a
missing one out (bench/peers.hpp tests __has_include)."""

def _optional_local_repository_impl(ctx):
    root = ctx.path(ctx.attr.path)
    if root.exists:
        for child in root.readdir():
            ctx.symlink(child, child.basename)
    ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % ctx.name)
    ctx.symlink(ctx.attr.build_file, "BUILD.bazel")

optional_local_repository = repository_rule(
    implementation = _optional_local_repository_impl,
    attrs = {
        "path": attr.string(mandatory = True, doc = "absolute path of the folder"),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
    },
    local = True,
)
