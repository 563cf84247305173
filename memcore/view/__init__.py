"""``memcore-view``: a static site to read one run item by item (its evidence against the gold), or two side by side.

:mod:`memcore.view.data` builds what the site shows (unit-testable, no browser); :mod:`memcore.view.site` writes the
site and is the console entry point. The page itself (HTML, JS, CSS) lives in ``static/``.
"""
