"""The stack launcher (stack/ringi_stack/), which `make dev`, `make bench` and this suite share: workers started
at the same moment (two suites side by side, a test's extra workers) all come up."""
from concurrent.futures import ThreadPoolExecutor

from ringi_stack import http_ok


def test_workers_started_at_the_same_moment_all_come_up(stack):
    # Each `wrangler dev` is given an inspector port of its own. Left to choose, each probes 9229 upwards and binds
    # later, so two starting together both take 9229 and one exits with "Address already in use".
    names = [f"simultaneous-{i}" for i in range(3)]
    try:
        with ThreadPoolExecutor(len(names)) as pool:
            urls = list(pool.map(lambda name: stack.extra_worker(name, {}), names))
        assert len(set(urls)) == len(names)
        assert all(http_ok(f"{url}/healthz") for url in urls)
    finally:
        for name in names:
            stack.stop_component(f"worker-{name}")
