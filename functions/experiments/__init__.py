"""Experiments feature Lambda."""
