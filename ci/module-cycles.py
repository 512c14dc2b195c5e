#!/usr/bin/env python3
"""Fail when a crate's modules depend on each other in a cycle, or a pure
stage reaches I/O.

usage: ci/module-cycles.py CRATE_SRC_DIR...   (exit 1 and list each cycle)
       ci/module-cycles.py --self-test

A module is a file (`a/b.rs` or `a/b/mod.rs` is `a::b`). It depends on every
module its non-test code names by path: `crate::a::b::Item`,
`super::x`, `self::x`, and each name in `use crate::a::{b, c}`. A parent
naming its own children is containment, not dependency. Checked twice: file
by file, and by top-level module (`run::*` as one), so neither two files nor
two stages go round. And walls (`WALLS`): a stage that must stay pure
(`plan`) reaches no module it must not, by any path, and its own code
names no I/O (`std::fs`, `tokio`).

Written here rather than taken from cargo-modules (which has `--acyclic`):
that builds rust-analyzer, tens of minutes on the CI's two cores, for a
check that path-matching does well enough on code written as this is.
"""
import contextlib
import io
import os
import re
import sys
import tempfile


def modules(src):
    found = {}
    for root, _, names in os.walk(src):
        for n in names:
            if not n.endswith('.rs') or (root == src and n == 'main.rs'):
                continue
            path = os.path.join(root, n)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts[-1] == 'mod':
                parts = parts[:-1]
            if parts == ['lib']:
                parts = []
            found[tuple(parts)] = path
    return found


def code_of(path):
    text = open(path, encoding='utf-8').read()
    text = re.split(r'#\[cfg\(test\)\]\s*mod tests', text)[0]  # tests may use anything
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def dependencies(mods):
    def resolve(path):
        for k in range(len(path), -1, -1):
            if tuple(path[:k]) in mods:
                return tuple(path[:k])
        return None

    def absolute(mod, head, tail):
        at = [] if head == 'crate' else list(mod[:-1]) if head == 'super' else list(mod)
        while tail and tail[0] == 'super':  # super::super::x
            at, tail = at[:-1], tail[1:]
        return at + tail

    edges = {}
    for mod, path in mods.items():
        code, deps = code_of(path), set()
        for m in re.finditer(r'\b(crate|super|self)((?:::\w+)+)', code):
            deps.add(resolve(absolute(mod, m.group(1), m.group(2).split('::')[1:])))
        for m in re.finditer(r'\b(crate|super|self)((?:::\w+)*)::\{([^{}]*)\}', code):
            prefix = absolute(mod, m.group(1), [t for t in m.group(2).split('::') if t])
            for item in m.group(3).split(','):
                item = item.strip().split('::')[0].split(' ')[0]
                if item and item != 'self':
                    deps.add(resolve(prefix + [item]))
        edges[mod] = {d for d in deps if d is not None and d != mod and d[:len(mod)] != mod}
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def by_stage(edges):
    top = {}
    for a, ds in edges.items():
        top.setdefault(a[:1], set()).update(d[:1] for d in ds if d[:1] and d[:1] != a[:1])
    return top


# Stages that must stay pure, and what they must not reach: crate modules
# (by any path through the crate) and, in their own code, other names.
# ARCHITECTURE.md's "the planner does no I/O".
WALLS = {
    ('plan',): (['session', 'store', 'run'], [r'\btokio::', r'\bstd::fs\b', r'\buse std::\{[^}]*\bfs\b']),
}


def walls(mods, edges):
    """Each breach of WALLS, as text."""
    name = lambda m: '::'.join(m) or 'crate'
    out = []
    for stage, (banned, names) in WALLS.items():
        inside = [m for m in mods if m[:len(stage)] == stage]
        for m in inside:
            for pattern in names:
                if re.search(pattern, code_of(mods[m])):
                    out.append(f'{name(m)} names {pattern} (`{name(stage)}` stays pure)')
        # Breadth-first from the stage, remembering the way for the message.
        way = {m: [m] for m in inside}
        todo = list(inside)
        while todo:
            a = todo.pop(0)
            for b in sorted(edges.get(a, ())):
                if b not in way:
                    way[b] = way[a] + [b]
                    todo.append(b)
        for b, path in sorted(way.items()):
            if b[:1] and b[0] in banned:
                out.append(f'{name(stage)} reaches {name(b)}: ' + ' -> '.join(name(m) for m in path))
    return out


def check(src):
    mods = modules(src)
    edges = dependencies(mods)
    found = [(kind, c) for kind, g in (('file', edges), ('stage', by_stage(edges))) for c in cycles(g)]
    breaches = walls(mods, edges)
    for b in breaches:
        print(f'{src}: wall: {b}')
    name = lambda m: '::'.join(m) or 'crate'
    for kind, comp in found:
        print(f'{src}: {kind} cycle: ' + ', '.join(name(m) for m in comp))
        g = edges if kind == 'file' else by_stage(edges)
        for a in comp:
            for b in sorted(g[a]):
                if b in comp:
                    print(f'    {name(a)} -> {name(b)}')
    return not found and not breaches


def self_test():
    def write(d, files):
        for f, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
            open(os.path.join(d, f), 'w').write(text)

    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        crate = lambda files: write(d, files)
        crate({'lib.rs': 'pub mod a;\npub mod b;\n', 'a/mod.rs': 'pub mod x;\nuse crate::b::Y;\n',
               'a/x.rs': 'use super::super::b;\n', 'b.rs': '// crate::a::X in a comment\npub struct Y;\n'})
        assert check(d), 'no cycle: a -> b only'
        crate({'b.rs': 'use crate::a::{x::Z};\npub struct Y;\n#[cfg(test)]\nmod tests { use crate::a; }\n'})
        assert not check(d), 'a -> b -> a::x is a stage cycle'
        crate({'b.rs': 'pub struct Y;\n', 'a/y.rs': 'use super::x;\n', 'a/x.rs': 'use super::y::Q;\n',
               'a/mod.rs': 'pub mod x;\npub mod y;\n'})
        assert not check(d), 'a::x <-> a::y is a file cycle'
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        crate = lambda files: write(d, files)
        crate({'lib.rs': 'pub mod plan;\npub mod store;\npub mod human;\n', 'store.rs': 'use crate::human;\n',
               'human.rs': '// std::fs in a comment\n', 'plan/mod.rs': 'mod cells;\nuse crate::human::x;\n',
               'plan/cells.rs': 'use super::y;\nfn f() { let s = "std::fs"; }\n'})
        assert check(d), 'plan reaching human only is within its wall'
        crate({'human.rs': 'use crate::store::Db;\n', 'store.rs': 'pub struct Db;\n'})
        assert not check(d), 'plan -> human -> store breaches the wall'
        crate({'human.rs': '\n', 'plan/cells.rs': 'fn f() { std::fs::read("x"); }\n'})
        assert not check(d), 'plan naming std::fs breaches the wall'
        crate({'plan/cells.rs': 'use std::{fs, io};\n'})
        assert not check(d), 'plan taking fs from std breaches the wall'
        crate({'plan/cells.rs': 'async fn f() { tokio::spawn(g()); }\n'})
        assert not check(d), 'plan naming tokio breaches the wall'
    print('module-cycles: self-test passed')


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        self_test()
        sys.exit(0)
    ok = all([check(src) for src in sys.argv[1:]])
    sys.exit(0 if ok else 1)
