"""The core's API, named once: what the window, the command line and the batch runners use.

This stub is the one list. ``__init__.py`` hands its names out lazily from it (``lazy_loader``), so that
naming ``Settings`` or ``Progress`` does not import torch, and mypy reads the names' types from it. The
modules offered whole are the core's top-level ones (errors, progress, settings), which the import
contracts allow; nothing from ``io``, ``network``, ``objective``, ``run`` or ``jobs`` is offered but by name.
"""

from . import errors, progress, settings
from .about import About as About
from .about import bound_text as bound_text
from .about import check_fields as check_fields
from .about import described as described
from .errors import Cancelled as Cancelled
from .errors import ImageLoadError as ImageLoadError
from .errors import OutputError as OutputError
from .errors import SettingsError as SettingsError
from .errors import StyleStudioError as StyleStudioError
from .errors import UnsafePathError as UnsafePathError
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
from .io.video import ClipInfo as ClipInfo
from .io.video import VideoError as VideoError
from .io.video import is_video_path as is_video_path
from .io.video import probe as probe
from .io.video import read_frames as read_frames
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
from .jobs.job import video_key as video_key
from .jobs.kept import KeptResult as KeptResult
from .jobs.kept import KeptResults as KeptResults
from .jobs.render import render_job as render_job
from .jobs.render import write_output as write_output
from .jobs.render import write_picture as write_picture
from .jobs.render_queue import BUSY as BUSY
from .jobs.render_queue import QueueItem as QueueItem
from .jobs.render_queue import RenderQueue as RenderQueue
from .jobs.render_queue import is_queue_run as is_queue_run
from .jobs.render_queue import item_for as item_for
from .jobs.video_job import FrameRecord as FrameRecord
from .jobs.video_job import RenderedVideo as RenderedVideo
from .jobs.video_job import check_video_job as check_video_job
from .jobs.video_job import render_video as render_video
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
from .run.cancel import CancelToken as CancelToken
from .run.checkpoints import Checkpoint as Checkpoint
from .run.checkpoints import CheckpointStore as CheckpointStore
from .run.compute import NetworkWeights as NetworkWeights
from .run.engine import StyleTransfer as StyleTransfer
from .run.live import LiveChanges as LiveChanges
from .run.memory import available_bytes as available_bytes
from .run.plan import RunPlan as RunPlan
from .run.plan import Target as Target
from .run.plan import plan_run as plan_run
from .settings import Settings as Settings

__all__ = [
    "BUSY",
    "CANCELLED",
    "DEFAULT_FEATHER",
    "FINISHED",
    "FORMATS",
    "IMAGENET",
    "JOB_KEY",
    "LAYER_NAMES",
    "MAX_DPI",
    "PALETTE",
    "PRIMARY_STYLE_LAYERS",
    "UNTRAINED",
    "About",
    "Busy",
    "CancelToken",
    "Cancelled",
    "Checkpoint",
    "CheckpointStore",
    "ClipInfo",
    "FrameFolder",
    "FrameRecord",
    "ImageLoadError",
    "Job",
    "JobInputs",
    "JobOutcome",
    "KeptResult",
    "KeptResults",
    "LiveChanges",
    "LoadedWeights",
    "NetworkWeights",
    "Output",
    "OutputError",
    "OutputOptions",
    "Progress",
    "QueueItem",
    "Region",
    "RegionError",
    "RegionSpec",
    "Regions",
    "RenderQueue",
    "RenderedJob",
    "RenderedVideo",
    "RunPlan",
    "Settings",
    "SettingsError",
    "Stroke",
    "StyleStudioError",
    "StyleTransfer",
    "Target",
    "UnsafePathError",
    "VideoError",
    "VideoOptions",
    "already_done",
    "available_bytes",
    "bound_text",
    "check_fields",
    "check_image_fits",
    "check_jobs",
    "check_video_job",
    "cleared",
    "decode_image",
    "describe",
    "described",
    "download_imagenet",
    "errors",
    "file_digest",
    "filled",
    "fit_size",
    "folder_lock",
    "folder_problem",
    "from_document",
    "held",
    "image_hash",
    "imagenet_cache_path",
    "is_imagenet_cached",
    "is_layer",
    "is_queue_run",
    "is_video_path",
    "item_for",
    "job_key",
    "jobs_from_arguments",
    "jobs_from_file",
    "load_image",
    "load_weights",
    "output_key",
    "parse_colour",
    "picture_metadata",
    "plan_run",
    "probe",
    "progress",
    "read_frames",
    "read_metadata",
    "read_state_dict",
    "regions_from_mask",
    "regions_from_picture",
    "remove_partial_files",
    "render_job",
    "render_video",
    "save_image",
    "settings",
    "summary_rows",
    "video_key",
    "write_atomically",
    "write_output",
    "write_picture",
]
