import sys

from airflow_leastaction.cli import main

sys.exit(main())
