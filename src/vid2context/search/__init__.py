"""Search over the library: what gets embedded (``windows``), the vector index (``vectors``) and,
with the issues that follow, embedders, keyword and vector fusion.

Kept nearly empty on purpose: each module is imported by name, so the Worker loads only what it uses.
"""
