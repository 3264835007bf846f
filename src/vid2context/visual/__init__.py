"""The on-screen layer (``mode=video``): frames, OCR and vision rungs, merged into ``VisualItem``s.

Portable here: ``base`` (the rung protocol), ``merge`` (frames into stretches) and ``layer`` (the
ladder). Local only: ``frames`` (ffmpeg), ``tesseract`` and ``local_ocr`` (the OCR rung).
"""
