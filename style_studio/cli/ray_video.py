"""``style-studio video --ray``: a long clip in chunks, Ray tasks; its bytes and the weights go by the object store."""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import Cancelled, StyleStudioError
from .ray_cluster import RayCluster, _weights_bytes, _weights_digest, _weights_from_bytes

if TYPE_CHECKING:
    from ..core import CancelToken, ChunkFrames, ChunkStyled, ChunkWork


def _ray_chunk(
    work: ChunkWork, clip: bytes, weights_data: bytes | None, weights_digest: str, threads: int, inbox: Any
) -> Any:
    """A Ray task: style one chunk on whichever node Ray chose, from the clip's bytes (a file of its own there),
    handing each frame to ``inbox`` (a ``StyledFrames`` actor) as it is done; run again after its worker
    died, it goes on from the frames handed over before."""
    import ray
    import torch

    from ..core import render_chunk

    torch.set_num_threads(threads)
    weights = _weights_from_bytes(work.job.settings.weights, weights_data, weights_digest)
    handed = {work.chunk.start + i: picture for i, picture in enumerate(work.kept)}
    handed |= ray.get(inbox.kept.remote(work.chunk.index))
    kept = list(itertools.takewhile(lambda n: n in handed, itertools.count(work.chunk.start)))
    work = dataclasses.replace(work, kept=tuple(handed[n] for n in kept))

    def styled(number: int, picture: Any) -> None:
        inbox.tell.remote(work.chunk.index, number, picture)  # not waited for: the next frame goes on

    with tempfile.TemporaryDirectory(prefix="style-studio-chunk-") as folder:
        path = Path(folder) / f"clip{work.job.content.suffix}"
        path.write_bytes(clip)
        return render_chunk(work, weights, clip=path, styled=styled)


class StyledFrames:
    """A Ray actor: the frames the chunks under way have styled (by the chunk's index, then the frame's number),
    the ones not yet taken by the render, and each chunk's until it is done."""

    def __init__(self) -> None:
        self.frames: dict[int, dict[int, Any]] = {}
        self.new: list[tuple[int, int, Any]] = []

    def tell(self, index: int, number: int, picture: Any) -> None:
        self.frames.setdefault(index, {})[number] = picture
        self.new.append((index, number, picture))

    def take(self) -> list[tuple[int, int, Any]]:
        """The frames styled since the last take."""
        new, self.new = self.new, []
        return new

    def kept(self, index: int) -> dict[int, Any]:
        return dict(self.frames.get(index, {}))

    def forget(self, index: int) -> None:
        self.frames.pop(index, None)


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
        inbox = ray.remote(num_cpus=0)(StyledFrames).remote()
        refs = {task.remote(work, self._clip(work.job.content), *weights, cpus, inbox): work for work in works}
        chunks = {work.chunk.index: work.chunk for work in works}
        try:
            while refs:
                if cancel.cancelled:
                    raise Cancelled()
                done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
                if styled is not None:  # every frame handed over, those of the chunks just done too
                    for index, number, picture in ray.get(inbox.take.remote()):
                        styled(chunks[index], number, picture)
                for ref in done:
                    work = refs.pop(ref)
                    inbox.forget.remote(work.chunk.index)
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
            ray.kill(inbox)

    def _clip(self, path: Path) -> Any:
        if path not in self._clips:
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise StyleStudioError(f"{path.name} cannot be read ({exc.strerror or exc})") from None
            self._clips[path] = self._ray.put(data)
        return self._clips[path]
