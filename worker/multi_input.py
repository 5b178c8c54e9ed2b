"""Several per-input workers in one process (`--consume all`): council sessions and LLM
responses, each with its own subscription, pipeline and drain; one ops server and one stop."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from .metrics import WorkerMetrics
from .ops_server import OpsServer


class MultiInputWorker:
    def __init__(
        self, workers: list[Any], metrics: WorkerMetrics, *, ops_host: str = "127.0.0.1", ops_port: int = 9464
    ) -> None:
        """workers: one per input, run with ops=False; ops_host, ops_port: the one ops server."""
        self.workers = workers
        self.metrics = metrics  # shared by the workers (their series differ by topic)
        self.ops_host, self.ops_port = ops_host, ops_port
        self.stopping = asyncio.Event()
        self.ops: OpsServer | None = None

    @property
    def processed(self) -> int:
        return sum(worker.processed for worker in self.workers)

    def liveness(self) -> tuple[bool, str]:
        for worker in self.workers:
            ok, detail = worker.liveness()
            if not ok:
                return ok, detail
        return True, "every input's consume loop runs"

    async def readiness(self) -> tuple[bool, str]:
        for worker in self.workers:
            ok, detail = await worker.readiness()
            if not ok:
                return ok, detail
        return True, "every input's broker and the window store reachable"

    async def run(self, *, install_signal_handlers: bool = True, ready: asyncio.Event | None = None) -> None:
        loop = asyncio.get_running_loop()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stopping.set)
        self.ops = OpsServer(self, self.metrics, self.ops_host, self.ops_port)
        await self.ops.start()
        started = [asyncio.Event() for _ in self.workers]
        runs = [
            asyncio.create_task(worker.run(install_signal_handlers=False, ready=event, ops=False))
            for worker, event in zip(self.workers, started)
        ]

        async def stop_all() -> None:
            await self.stopping.wait()
            for worker in self.workers:
                worker.stopping.set()

        stopper = asyncio.create_task(stop_all())
        all_started = asyncio.ensure_future(asyncio.gather(*(event.wait() for event in started)))
        try:
            # ready once every input reads (or stop waiting when one of them ends early)
            await asyncio.wait([all_started, *runs], return_when=asyncio.FIRST_COMPLETED)
            if ready is not None and all_started.done():
                ready.set()
            await asyncio.gather(*runs)  # a worker that fails stops the others and raises
        except BaseException:
            self.stopping.set()
            await asyncio.gather(*runs, return_exceptions=True)
            raise
        finally:
            stopper.cancel()
            all_started.cancel()
            await self.ops.stop()
