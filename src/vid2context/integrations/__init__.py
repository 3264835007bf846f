"""Outside services whose data enriches a video: one module per service (SponsorBlock, ...)."""
