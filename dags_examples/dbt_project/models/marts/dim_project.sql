{{ config(meta={'tier': 'fast'}) }}

select
    p.project_id,
    p.project_name,
    p.region,
    count(distinct w.work_order_id) as work_orders,
    max(t.worked_on) as last_worked_on
from {{ ref('stg_field_ops__projects') }} as p
left join {{ ref('stg_field_ops__work_orders') }} as w on w.project_id = p.project_id
left join {{ ref('stg_field_ops__time_entries') }} as t on t.work_order_id = w.work_order_id
group by 1, 2, 3
