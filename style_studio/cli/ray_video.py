"""``style-studio video --ray``: a long clip in chunks, Ray tasks; its bytes and the weights go by the object store."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import Cancelled, StyleStudioError
from .ray_cluster import RayCluster, _weights_bytes, _weights_digest, _weights_from_bytes

if TYPE_CHECKING:
    from ..core import CancelToken, ChunkFrames, ChunkStyled, ChunkWork


def _ray_chunk(
    work: ChunkWork, clip: bytes, weights_data: bytes | None, weights_digest: str, threads: int, counts: Any
) -> Any:
    """A Ray task: style one chunk on whichever node Ray chose, from the clip's bytes (a file of its own there),
    telling ``counts`` (a ``StyledCounts`` actor) after each frame."""
    import torch

    from ..core import render_chunk

    torch.set_num_threads(threads)
    weights = _weights_from_bytes(work.job.settings.weights, weights_data, weights_digest)

    def styled(frames: int) -> None:
        counts.tell.remote(work.chunk.index, frames)  # not waited for: the next frame goes on

    with tempfile.TemporaryDirectory(prefix="style-studio-chunk-") as folder:
        path = Path(folder) / f"clip{work.job.content.suffix}"
        path.write_bytes(clip)
        return render_chunk(work, weights, clip=path, styled=styled)


class StyledCounts:
    """A Ray actor: how many of its own frames each chunk under way has styled, by the chunk's index."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def tell(self, index: int, frames: int) -> None:
        self.counts[index] = max(frames, self.counts.get(index, 0))

    def take(self) -> dict[int, int]:
        return dict(self.counts)


class RayChunks:
    """A clip's chunks as tasks on a Ray cluster (``address`` "auto" or host:port), one GPU each where there are
    GPUs, else the CPUs shared out between the chunks under way. Stopping cancels the tasks under way."""

    def __init__(self, address: str) -> None:
        self.cluster = RayCluster(address)
        self._ray = self.cluster._ray
        self._clips: dict[Path, Any] = {}  # each clip's bytes in the object store, put once

    def connect(self) -> str:
        return self.cluster.connect()

    def close(self) -> None:
        self.cluster.close()

    def run(
        self, works: Sequence[ChunkWork], cancel: CancelToken, styled: ChunkStyled | None = None
    ) -> Iterator[ChunkFrames]:
        if not works:
            return
        ray = self._ray
        resources = ray.cluster_resources()
        gpus, total = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
        cpus = 1 if gpus else max(1, total // min(len(works), total))
        task = ray.remote(num_cpus=cpus, num_gpus=1 if gpus else 0, max_retries=1)(_ray_chunk)
        choice = works[0].job.settings.weights
        weights = (ray.put(_weights_bytes(choice)), _weights_digest(choice))
        counts = ray.remote(num_cpus=0)(StyledCounts).remote()
        refs = {task.remote(work, self._clip(work.job.content), *weights, cpus, counts): work for work in works}
        chunks = {work.chunk.index: work.chunk for work in works}
        try:
            while refs:
                if cancel.cancelled:
                    raise Cancelled()
                done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
                if styled is not None:
                    under_way = {refs[ref].chunk.index for ref in refs if ref not in done}
                    for index, frames in ray.get(counts.take.remote()).items():
                        if index in under_way:
                            styled(chunks[index], frames)
                for ref in done:
                    work = refs.pop(ref)
                    result = self.cluster.result_of(ref)
                    if isinstance(result, StyleStudioError):
                        raise StyleStudioError(f"{work.chunk.name} of {work.job.content.name}: {result}")
                    yield result  # type: ignore[misc]
        finally:
            for ref in refs:  # stopped, or a chunk failed: the others under way are not waited for
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # a task that already ended cannot be cancelled
                    continue
            ray.kill(counts)

    def _clip(self, path: Path) -> Any:
        if path not in self._clips:
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise StyleStudioError(f"{path.name} cannot be read ({exc.strerror or exc})") from None
            self._clips[path] = self._ray.put(data)
        return self._clips[path]
