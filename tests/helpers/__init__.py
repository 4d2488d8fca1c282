"""What the tests share: the test deployments, the browser, the example flows, and small readers of what a
run left behind. Imported one way, as ``tests.helpers.<module>``."""
