"""Artifacts feature: presigned S3 multipart uploads and downloads, listings, small PUTs."""
