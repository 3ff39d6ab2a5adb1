"""Makes test packages ``tests.<area>``: a bare ``<area>`` package (tests/artifacts, tests/registry) would
shadow the feature package of the same name under functions/ that the local runtime imports."""
