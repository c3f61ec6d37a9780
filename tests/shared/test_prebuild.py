"""A search's compile steps: collected only while a search binds its candidates, each run once, side by side."""

import threading

import pytest

from implementations.core import prebuild


def test_steps_are_kept_only_inside_a_collecting_block():
    prebuild.add("outside", lambda pool: None)
    with prebuild.collecting() as outer:
        prebuild.add("a", lambda pool: None)
        with prebuild.collecting() as inner:
            prebuild.add("b", lambda pool: None)
        prebuild.add("c", lambda pool: None)
    assert [key for key, _ in outer] == ["a", "c"]
    assert [key for key, _ in inner] == ["b"]


def test_build_compiles_each_kernel_once_on_the_pool_and_leaves_failures_to_the_launch():
    compiled, threads = [], set()

    def compile_step(name):
        def compile_on(pool):
            return pool.submit(lambda: (compiled.append(name), threads.add(threading.get_ident())))
        return compile_on

    def fails_to_start(pool):
        raise RuntimeError("a kernel that does not compile: its launch reports it")

    def fails_on_the_pool(pool):
        return pool.submit(lambda: 1 / 0)

    with prebuild.collecting() as steps:
        for name in ("a", "b", "a"):
            prebuild.add(name, compile_step(name))
        prebuild.add("broken", fails_to_start)
        prebuild.add("broken on the pool", fails_on_the_pool)
    prebuild.build(steps)
    assert sorted(compiled) == ["a", "b"]
    assert threading.get_ident() not in threads, "the compiles run on the pool, not in the caller"


@pytest.mark.parametrize("count", [0, 1])
def test_a_single_compile_is_left_to_its_launch(count):
    started = []
    prebuild.build([(i, lambda pool: started.append(1)) for i in range(count)])
    assert not started
