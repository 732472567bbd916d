"""Comparisons of kernel variants (numerics, timing, IR), the one result model they fill, and its renderers."""
