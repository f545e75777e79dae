"""The sections of an analysed run, one module each: the module that builds a section owns its
figures, their one name, their good/bad thresholds, its words and its one-line verdict.

========================  ==========================================================================
``verdict``               matrix-unit share, eligibility, why-not, the vendor's words
``time``                  wall / kernel / matrix-unit / memory time, GPU busy share
``breakdown``             time by op, op type, scope, kernel and GPU
``iterations``            how the run was split, per-iteration rows, outliers
``steps``                 per (iteration, GPU) step breakdown, the one-iteration timeline
``communication``         collective kernel time and its overlap with compute
``host``                  a CPU-only run's host time by op and op type
``precision``             op time per data type, the precision mode
``signals``               autotuning, compilation, data loading inside the range (the rules' input)
========================  ==========================================================================

Throughput (FLOPs, MFU) is :class:`tcreport.analysis.throughput.Throughput`, built by its own
module. :func:`tcreport.analysis.result.compute` builds them all; renderers format them and decide
nothing.
"""
