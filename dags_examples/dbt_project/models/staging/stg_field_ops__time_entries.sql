{{ config(materialized='table') }}

select
    cast(entry_id as integer) as entry_id,
    cast(work_order_id as integer) as work_order_id,
    cast(hours as double) as hours,
    cast(hourly_rate as double) as hourly_rate,
    cast(worked_on as date) as worked_on
from {{ source('field_ops', 'time_entries') }}
