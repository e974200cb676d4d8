"""A job's key finds its checkpoint and kept frames again: settings added later do not change the keys made before."""

from __future__ import annotations

import dataclasses

import numpy as np
from PIL import Image

from style_studio.core.jobs.job import job_key
from tests.former import FORMER_DEFAULTS

CONTENT = Image.fromarray(np.arange(48 * 32 * 3, dtype=np.uint8).reshape(32, 48, 3))
STYLE = Image.fromarray((np.arange(24 * 24 * 3, dtype=np.uint8) * 7).reshape(24, 24, 3))
SETTINGS = dataclasses.replace(FORMER_DEFAULTS, weights="untrained")  # keys pinned before the defaults changed


def test_a_jobs_key_is_the_one_made_before_the_style_loss_setting_existed():
    # Made by the version before ``style_loss``: an unfinished batch job of then resumes now.
    assert job_key(SETTINGS, CONTENT, [STYLE]) == "28d148ec0ef26d2685d4977d91df1708"


def test_a_new_setting_away_from_its_default_keys_differently():
    assert job_key(dataclasses.replace(SETTINGS, style_loss="gaussian"), CONTENT, [STYLE]) != job_key(
        SETTINGS, CONTENT, [STYLE]
    )
