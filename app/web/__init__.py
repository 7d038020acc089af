"""The browser pages: HTML shells whose scripts (built from frontend/) call the JSON API."""
