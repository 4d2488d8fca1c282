{{ config(materialized='table') }}

select
    cast(work_order_id as integer) as work_order_id,
    cast(project_id as integer) as project_id,
    lower(status) as status,
    cast(opened_at as timestamp) as opened_at
from {{ source('field_ops', 'work_orders') }}
