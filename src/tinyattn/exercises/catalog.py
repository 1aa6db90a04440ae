"""The exercises tinyattn ships, in order: one module each (e01_add ... e23_mlp_batchnorm), each with its
EXERCISE. `tinyattn.exercises.EXERCISES` and the `tinyattn exercises` command read them from here."""

from . import (e01_add, e02_mul, e03_sum, e04_mean, e05_matmul, e06_exp_log, e07_relu, e08_gelu, e09_softmax,
               e10_log_softmax, e11_cross_entropy, e12_layer_norm, e13_embedding, e14_dropout, e15_masked_fill,
               e16_causal_head, e17_multi_head_attention, e18_topological_order, e19_accumulate, e20_unbroadcast,
               e21_saved, e22_apply, e23_mlp_batchnorm)

EXERCISES = tuple(module.EXERCISE for module in (
    e01_add, e02_mul, e03_sum, e04_mean, e05_matmul, e06_exp_log, e07_relu, e08_gelu, e09_softmax, e10_log_softmax,
    e11_cross_entropy, e12_layer_norm, e13_embedding, e14_dropout, e15_masked_fill, e16_causal_head,
    e17_multi_head_attention, e18_topological_order, e19_accumulate, e20_unbroadcast, e21_saved, e22_apply,
    e23_mlp_batchnorm))
