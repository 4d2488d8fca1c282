{{ config(materialized='view') }}

select work_order_id, project_id, opened_at
from {{ ref('stg_field_ops__work_orders') }}
where status = 'open'
