"""Guided tour: the Transformer in the lecture's order, one step per screen (Back / Next, or the arrow keys), on the
sidebar's sentence with the model's own numbers: tokens -> embedding -> Positional Encoding -> Q, K, V ->
Q Kᵀ / √d_k (with a neuron view of one query-key pair) -> mask -> Softmax -> × V -> Concat and W_O -> Add & Norm
-> Feed Forward -> decoder masked self-attention -> cross-attention -> output probabilities. The step is in the URL
(`?step=6`); the quiz switch turns three steps into "predict, then reveal". Steps and layout: ui/tour.py; the
questions: ui/quiz.py; figures: viz/steps.py, viz/positional.py, viz/seq2seq.py, viz/tour.py."""

from ui import tour
from ui.shell import current_view

tour.render(current_view())
