"""The migration steps, in layout order (each a module: ``NAME``, ``FROM``, ``TO``, ``run(context)``)."""

from __future__ import annotations

from tools.migrate.steps import metrics_outside_experiment

STEPS = [metrics_outside_experiment]
