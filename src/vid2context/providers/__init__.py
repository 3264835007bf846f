"""Source providers: one module per family of inputs (see ``base.SourceProvider``).

Nothing is imported here on purpose: the runtime imports the providers it puts in its ladders,
so the Worker never imports a local-only provider by importing this package.
"""
