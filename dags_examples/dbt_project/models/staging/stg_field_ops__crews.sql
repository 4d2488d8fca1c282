select
    cast(crew_id as integer) as crew_id,
    crew_name
from {{ source('field_ops', 'crews') }}
