select
    cast(project_id as integer) as project_id,
    project_name,
    region
from {{ source('field_ops', 'projects') }}
