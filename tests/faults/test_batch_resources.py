"""A batch holds one job's inputs at a time, and Ray workers neither leak weights files nor mistake one for another."""

from __future__ import annotations

import io
import tempfile

import torch

from style_studio.cli import ray_weights
from style_studio.cli.runners import InProcess, run_batch
from style_studio.core.jobs.batch import jobs_from_arguments
from style_studio.core.jobs.job import JobInputs
from style_studio.core.network.weights import expected_feature_shapes
from style_studio.core.settings import Settings
from tests.conftest import SAMPLES


def test_a_jobs_inputs_are_read_only_when_the_runner_takes_it(tmp_path, monkeypatch):
    photos = [SAMPLES / "content" / name for name in ("chelsea.png", "coffee.png", "astronaut.png")]
    settings = Settings(size=32, iterations=1, scales=1, weights="untrained")
    jobs = jobs_from_arguments(photos, [SAMPLES / "style" / "starry_night.jpg"], tmp_path / "out", settings)
    reads = []
    real_read = JobInputs.read.__func__

    def counting_read(cls, job, **options):
        reads.append(job.id)
        return real_read(cls, job, **options)

    monkeypatch.setattr(JobInputs, "read", classmethod(counting_read))
    read_when_taken = []

    class Recording(InProcess):
        def run(self, work):
            for inputs in work:
                read_when_taken.append(len(reads))
                yield from super().run([inputs])

    result = run_batch(jobs, Recording())
    assert [o.status for o in result.ordered()] == ["done", "done", "done"]
    assert read_when_taken == [1, 2, 3]  # not [3, 3, 3]: no job's bytes wait in memory for their turn


def features_file(last_bias: float) -> bytes:
    """A features-only VGG19 state dict: two of them differ only in the last layer, with the same size."""
    generator = torch.Generator().manual_seed(0)
    state = {key: torch.randn(shape, generator=generator) * 0.01 for key, shape in expected_feature_shapes().items()}
    state["34.bias"] = torch.full_like(state["34.bias"], last_bias)
    out = io.BytesIO()
    torch.save(state, out)
    return out.getvalue()


def test_a_ray_worker_tells_two_weights_files_apart_and_keeps_no_copy_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(ray_weights, "_shipped", {})
    first, second = features_file(0.5), features_file(-0.5)
    assert len(first) == len(second) and first[: 1 << 20] == second[: 1 << 20]
    a = ray_weights.weights_from_bytes("/data/vgg19-a.pth", first, "digest-a")
    b = ray_weights.weights_from_bytes("/data/vgg19-a.pth", second, "digest-b")
    assert float(a.state["34.bias"][0]) == 0.5 and float(b.state["34.bias"][0]) == -0.5
    assert a.label == b.label and "vgg19-a.pth" in a.label  # named as the submitter named them
    assert ray_weights.weights_from_bytes("/data/vgg19-a.pth", first, "digest-a") is a  # loaded once per worker
    assert list(tmp_path.iterdir()) == []  # no 80-550 MB copy left in /tmp
