"""Style Studio's core: what the window, the command line and the batch runners use.

The core is in layers, each importing only those below it (import-linter checks
this; see ``pyproject.toml``):

- ``jobs``: batches, the render queue, kept results;
- ``run``: the engine, step control, L-BFGS, the memory plan, checkpoints;
- ``objective``: losses, Gram matrices, capture hooks, regions, tiles;
- ``settings`` and ``progress``: the settings and the records a run reports;
- ``network``: VGG19's layers by name, its weights, the device;
- ``io``: picture and video files, the guarded writer every output goes through, locks;
- ``errors``.

The names below are loaded when first used, so that naming ``Settings`` or
``Progress`` does not import torch (the window starts before it needs it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import errors as errors
    from . import progress as progress
    from . import settings as settings
    from .errors import Cancelled as Cancelled
    from .errors import ImageLoadError as ImageLoadError
    from .errors import OutputError as OutputError
    from .errors import SettingsError as SettingsError
    from .errors import StyleStudioError as StyleStudioError
    from .errors import UnsafePathError as UnsafePathError
    from .io import imageio as imageio
    from .io import video as video
    from .io.files import file_digest as file_digest
    from .io.files import folder_problem as folder_problem
    from .io.files import write_atomically as write_atomically
    from .io.imageio import FORMATS as FORMATS
    from .io.imageio import decode_image as decode_image
    from .io.imageio import fit_size as fit_size
    from .io.imageio import image_hash as image_hash
    from .io.imageio import load_image as load_image
    from .io.imageio import read_metadata as read_metadata
    from .io.imageio import save_image as save_image
    from .io.locks import Busy as Busy
    from .io.locks import folder_lock as folder_lock
    from .io.locks import held as held
    from .io.outputs import FrameFolder as FrameFolder
    from .io.outputs import Output as Output
    from .io.video import VideoError as VideoError
    from .io.video import is_video_path as is_video_path
    from .jobs.batch import JobOutcome as JobOutcome
    from .jobs.batch import OutputOptions as OutputOptions
    from .jobs.batch import check_jobs as check_jobs
    from .jobs.batch import jobs_from_arguments as jobs_from_arguments
    from .jobs.batch import jobs_from_file as jobs_from_file
    from .jobs.batch import remove_partial_files as remove_partial_files
    from .jobs.batch import summary_rows as summary_rows
    from .jobs.job import JOB_KEY as JOB_KEY
    from .jobs.job import MAX_DPI as MAX_DPI
    from .jobs.job import Job as Job
    from .jobs.job import JobInputs as JobInputs
    from .jobs.job import RenderedJob as RenderedJob
    from .jobs.job import VideoOptions as VideoOptions
    from .jobs.job import already_done as already_done
    from .jobs.job import job_key as job_key
    from .jobs.job import output_key as output_key
    from .jobs.job import picture_metadata as picture_metadata
    from .jobs.job import render_job as render_job
    from .jobs.job import write_output as write_output
    from .jobs.job import write_picture as write_picture
    from .jobs.kept import KeptResult as KeptResult
    from .jobs.kept import KeptResults as KeptResults
    from .jobs.render_queue import BUSY as BUSY
    from .jobs.render_queue import QueueItem as QueueItem
    from .jobs.render_queue import RenderQueue as RenderQueue
    from .jobs.render_queue import is_queue_run as is_queue_run
    from .jobs.render_queue import item_for as item_for
    from .jobs.video_job import FrameRecord as FrameRecord
    from .jobs.video_job import RenderedVideo as RenderedVideo
    from .jobs.video_job import check_video_job as check_video_job
    from .jobs.video_job import render_video as render_video
    from .jobs.video_job import video_key as video_key
    from .network import weights as weights
    from .network.layers import LAYER_NAMES as LAYER_NAMES
    from .network.layers import PRIMARY_STYLE_LAYERS as PRIMARY_STYLE_LAYERS
    from .network.layers import check_image_fits as check_image_fits
    from .network.layers import is_layer as is_layer
    from .network.weights import IMAGENET as IMAGENET
    from .network.weights import UNTRAINED as UNTRAINED
    from .network.weights import LoadedWeights as LoadedWeights
    from .network.weights import describe as describe
    from .network.weights import download_imagenet as download_imagenet
    from .network.weights import imagenet_cache_path as imagenet_cache_path
    from .network.weights import is_imagenet_cached as is_imagenet_cached
    from .network.weights import load_weights as load_weights
    from .network.weights import read_state_dict as read_state_dict
    from .objective.masks import RegionSpec as RegionSpec
    from .objective.masks import regions_from_mask as regions_from_mask
    from .objective.masks import regions_from_picture as regions_from_picture
    from .objective.regions import DEFAULT_FEATHER as DEFAULT_FEATHER
    from .objective.regions import PALETTE as PALETTE
    from .objective.regions import Region as Region
    from .objective.regions import RegionError as RegionError
    from .objective.regions import Regions as Regions
    from .objective.regions import from_document as from_document
    from .objective.regions import parse_colour as parse_colour
    from .objective.strokes import Stroke as Stroke
    from .objective.strokes import cleared as cleared
    from .objective.strokes import filled as filled
    from .progress import CANCELLED as CANCELLED
    from .progress import FINISHED as FINISHED
    from .progress import Progress as Progress
    from .run import memory as memory
    from .run.cancel import CancelToken as CancelToken
    from .run.checkpoints import Checkpoint as Checkpoint
    from .run.checkpoints import CheckpointStore as CheckpointStore
    from .run.compute import NetworkWeights as NetworkWeights
    from .run.engine import StyleTransfer as StyleTransfer
    from .run.plan import RunPlan as RunPlan
    from .run.plan import Target as Target
    from .run.plan import plan_run as plan_run
    from .settings import Settings as Settings

#: public name -> the module (relative to this package) that defines it
_NAMES: dict[str, str] = {
    "Cancelled": "errors",
    "ImageLoadError": "errors",
    "OutputError": "errors",
    "UnsafePathError": "errors",
    "SettingsError": "errors",
    "StyleStudioError": "errors",
    "Settings": "settings",
    "CANCELLED": "progress",
    "FINISHED": "progress",
    "Progress": "progress",
    "file_digest": "io.files",
    "folder_problem": "io.files",
    "write_atomically": "io.files",
    "FORMATS": "io.imageio",
    "decode_image": "io.imageio",
    "fit_size": "io.imageio",
    "load_image": "io.imageio",
    "read_metadata": "io.imageio",
    "save_image": "io.imageio",
    "Busy": "io.locks",
    "FrameFolder": "io.outputs",
    "Output": "io.outputs",
    "folder_lock": "io.locks",
    "held": "io.locks",
    "VideoError": "io.video",
    "is_video_path": "io.video",
    "VideoOptions": "jobs.job",
    "FrameRecord": "jobs.video_job",
    "RenderedVideo": "jobs.video_job",
    "check_video_job": "jobs.video_job",
    "render_video": "jobs.video_job",
    "video_key": "jobs.video_job",
    "LAYER_NAMES": "network.layers",
    "PRIMARY_STYLE_LAYERS": "network.layers",
    "check_image_fits": "network.layers",
    "is_layer": "network.layers",
    "IMAGENET": "network.weights",
    "LoadedWeights": "network.weights",
    "UNTRAINED": "network.weights",
    "describe": "network.weights",
    "download_imagenet": "network.weights",
    "imagenet_cache_path": "network.weights",
    "is_imagenet_cached": "network.weights",
    "load_weights": "network.weights",
    "read_state_dict": "network.weights",
    "DEFAULT_FEATHER": "objective.regions",
    "PALETTE": "objective.regions",
    "Region": "objective.regions",
    "RegionError": "objective.regions",
    "RegionSpec": "objective.masks",
    "Regions": "objective.regions",
    "Stroke": "objective.strokes",
    "cleared": "objective.strokes",
    "filled": "objective.strokes",
    "from_document": "objective.regions",
    "parse_colour": "objective.regions",
    "regions_from_mask": "objective.masks",
    "regions_from_picture": "objective.masks",
    "CancelToken": "run.cancel",
    "Checkpoint": "run.checkpoints",
    "CheckpointStore": "run.checkpoints",
    "image_hash": "io.imageio",
    "NetworkWeights": "run.compute",
    "RunPlan": "run.plan",
    "Target": "run.plan",
    "plan_run": "run.plan",
    "StyleTransfer": "run.engine",
    "JobOutcome": "jobs.batch",
    "check_jobs": "jobs.batch",
    "jobs_from_arguments": "jobs.batch",
    "jobs_from_file": "jobs.batch",
    "remove_partial_files": "jobs.batch",
    "summary_rows": "jobs.batch",
    "JOB_KEY": "jobs.job",
    "MAX_DPI": "jobs.job",
    "Job": "jobs.job",
    "JobInputs": "jobs.job",
    "RenderedJob": "jobs.job",
    "already_done": "jobs.job",
    "render_job": "jobs.job",
    "write_output": "jobs.job",
    "write_picture": "jobs.job",
    "picture_metadata": "jobs.job",
    "output_key": "jobs.job",
    "job_key": "jobs.job",
    "OutputOptions": "jobs.batch",
    "KeptResult": "jobs.kept",
    "KeptResults": "jobs.kept",
    "BUSY": "jobs.render_queue",
    "QueueItem": "jobs.render_queue",
    "RenderQueue": "jobs.render_queue",
    "is_queue_run": "jobs.render_queue",
    "item_for": "jobs.render_queue",
}
#: modules the API offers as a whole
_MODULES: dict[str, str] = {
    "errors": "errors",
    "imageio": "io.imageio",
    "memory": "run.memory",
    "progress": "progress",
    "settings": "settings",
    "video": "io.video",
    "weights": "network.weights",
}

__all__ = sorted([*_NAMES, *_MODULES])


if not TYPE_CHECKING:  # so that mypy sees only the names imported above, each with its type

    def __getattr__(name: str) -> Any:
        if name in _MODULES:
            return importlib.import_module(f".{_MODULES[name]}", __name__)
        if name in _NAMES:
            value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
